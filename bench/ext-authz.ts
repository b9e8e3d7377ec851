/**
 * What a Check costs next to a ShouldRateLimit for the same limit: the real service in-process (memory store),
 * one gRPC client per protocol over loopback, the same descriptor (remote_address) through both. Rounds
 * alternate between the protocols so that machine noise hits both alike; prints calls/s and latency
 * percentiles per protocol and their ratio. The Check carries the 12 headers a browser request typically has.
 *
 *   npx tsx bench/ext-authz.ts [--rounds 6] [--calls 2000] [--concurrency 16]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/observability/log.js';
import { startService } from '../src/app/start-service.js';
import { createMetrics } from '../src/observability/metrics.js';
import { AuthzTestClient, envoyCheckRequest } from '../test/support/authz-client.js';
import { RlsTestClient } from '../test/support/rls-client.js';
import { testSettings } from '../test/support/service.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/ext-authz.ts', { rounds: 'string', calls: 'string', concurrency: 'string' });
const rounds = args.num('rounds', 6);
const calls = args.num('calls', 2000);
const concurrency = args.num('concurrency', 16);

const RULES = `domain: edge
authz:
  rate_limits:
    - actions: [{remote_address: {}}]
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 1000000000}
`;

const BROWSER_HEADERS = {
  accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
  'accept-encoding': 'gzip, deflate, br',
  'accept-language': 'en-GB,en;q=0.9',
  cookie: 'session=7f3a9c2e11b04d8e; theme=dark',
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
  'x-forwarded-proto': 'https',
  'x-envoy-external-address': '198.51.100.7',
  referer: 'https://shop.example.com/',
};

async function run(send: (i: number) => Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const i = next++;
      const t = performance.now();
      await send(i);
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return latencies;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const dir = mkdtempSync(join(tmpdir(), 'rl-bench-authz-'));
writeFileSync(join(dir, 'edge.yaml'), RULES);
const service = await startService(testSettings({ configDir: dir }), {
  log: createLogger({ level: 'error', format: 'text', write: () => {} }),
  metrics: createMetrics({ defaultMetrics: false }),
});
const address = `127.0.0.1:${service.grpcPort}`;
const rls = new RlsTestClient(address);
const authz = new AuthzTestClient(address);
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const requests = Array.from({ length: calls }, (_, i) =>
  envoyCheckRequest({ ip: ip(i), headers: BROWSER_HEADERS, path: '/products?page=2', contextExtensions: { ratelimit_domain: 'edge' } }),
);
const protocols = {
  ShouldRateLimit: (i: number) => rls.ask('edge', [[['remote_address', ip(i)]]]),
  'ext_authz Check': (i: number) => authz.send(requests[i]),
};
const results: Record<string, { ms: number; latencies: number[] }> = { ShouldRateLimit: { ms: 0, latencies: [] }, 'ext_authz Check': { ms: 0, latencies: [] } };
await run(protocols.ShouldRateLimit); // warm-up
await run(protocols['ext_authz Check']);
for (let r = 0; r < rounds; r++) {
  for (const [name, send] of r % 2 === 0 ? Object.entries(protocols) : Object.entries(protocols).reverse()) {
    const t = performance.now();
    const lat = await run(send);
    results[name]!.ms += performance.now() - t;
    results[name]!.latencies.push(...lat);
  }
}
console.log(`npx tsx bench/ext-authz.ts --rounds ${rounds} --calls ${calls} --concurrency ${concurrency}   (Node ${process.version}, memory store, loopback)`);
const rate: Record<string, number> = {};
for (const [name, r] of Object.entries(results)) {
  const sorted = r.latencies.sort((a, b) => a - b);
  rate[name] = (rounds * calls) / (r.ms / 1000);
  console.log(`${name.padEnd(16)} ${rate[name].toFixed(0).padStart(6)} calls/s   p50 ${pct(sorted, 50).toFixed(2)} ms   p99 ${pct(sorted, 99).toFixed(2)} ms`);
}
console.log(`Check / ShouldRateLimit throughput: ${(rate['ext_authz Check']! / rate.ShouldRateLimit!).toFixed(2)}`);
rls.close();
authz.close();
await service.close();
rmSync(dir, { recursive: true, force: true });
