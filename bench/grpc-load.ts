/**
 * gRPC load benchmark: the real service in its own process (`ratelimit serve`), h2load (nghttp2) as the
 * client sending Envoy-shaped ShouldRateLimit calls over HTTP/2, then a sequential Node client for latency
 * percentiles at low load. Prints the figures and the command that produced them.
 *
 *   npx tsx bench/grpc-load.ts [--backend memory|redis] [--requests 200000] [--connections 4] [--streams 64]
 *                              [--scenarios default|throttling] [--rounds 1]
 *
 * --scenarios throttling: a hard rule beside a soft and two elastic ones (one client within its own limit, one
 * borrowing on every request), each run --rounds times, alternating, to compare ratios measured in one run.
 *
 * With --backend redis it starts its own redis-server on a free port (never the one on 6379).
 * The machine has 2 cores shared by server, client (and Redis): compare figures from one run, not across machines.
 */
import { encodeRequest, RawRlsClient } from '../test/support/raw-rls.js';
import { startRedis, type RedisServer } from '../test/support/redis.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import type { ServiceProcess } from '../test/support/service-process.js';
import { benchArgs } from './lib/args.js';
import { h2load } from './lib/h2load.js';
import { THROTTLING_DESCRIPTORS } from './lib/throttling-rules.js';

const args = benchArgs('bench/grpc-load.ts', {
  backend: 'string',
  requests: 'string',
  connections: 'string',
  streams: 'string',
  scenarios: 'string',
  rounds: 'string',
});
const backend = args.str('backend', 'memory');
const requests = args.num('requests', 200000);
const connections = args.num('connections', 4);
const streams = args.num('streams', 64);
const scenarioSet = args.str('scenarios', 'default');
const rounds = args.num('rounds', 1);

const RULES = `domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: blocked
    rate_limit: {unit: day, requests_per_unit: 1}
  - key: api
    rate_limits:
      - {unit: second, requests_per_unit: 1000000000, algorithm: token_bucket}
      - {unit: day, requests_per_unit: 4000000000, algorithm: sliding_window_counter}
${THROTTLING_DESCRIPTORS}`;

async function latency(address: string, n: number): Promise<{ p50: number; p99: number; p999: number }> {
  const client = new RawRlsClient(address);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await client.call('bench', [{ entries: [['user', `u${i % 1000}`]] }]);
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  client.close();
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { p50: at(0.5), p99: at(0.99), p999: at(0.999) };
}

const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'bench.yaml': RULES });
let redis: RedisServer | undefined;
let server: ServiceProcess | undefined;
try {
  const env: Record<string, string> = { BACKEND: backend };
  if (backend === 'redis') {
    redis = await startRedis();
    env.REDIS_URL = redis.url;
  }
  server = await startImage({ CONFIG_DIR: dir, ...env });
  const throttling: [string, Uint8Array][] = [
    ['hard (fixed_window)', encodeRequest('bench', [{ entries: [['hard', 'a']] }])],
    ['soft 10% (fixed_window)', encodeRequest('bench', [{ entries: [['soft', 'a']] }])],
    ['elastic, client within its own limit', encodeRequest('bench', [{ entries: [['elastic', 'a']] }])],
    ['elastic, client borrowing on every request', encodeRequest('bench', [{ entries: [['borrowing', 'a']] }])],
  ];
  const scenarios: [string, Uint8Array][] =
    scenarioSet === 'throttling'
      ? Array.from({ length: rounds }, () => throttling).flat()
      : [
          ['1 descriptor, admitted (fixed_window)', encodeRequest('bench', [{ entries: [['user', 'alice']] }])],
          ['1 descriptor, over limit', encodeRequest('bench', [{ entries: [['blocked', 'x']] }])],
          [
            '2 descriptors, 3 limits (fixed, token_bucket, sliding_window_counter)',
            encodeRequest('bench', [{ entries: [['user', 'bob']] }, { entries: [['api', 'k']] }]),
          ],
        ];
  console.log(`# gRPC load, backend=${backend}, ${requests} requests, ${connections} connections x ${streams} streams, node ${process.version}`);
  console.log(`# command: npx tsx bench/grpc-load.ts ${args.argv.join(' ')}`.trimEnd());
  console.log('| scenario | req/s | mean ms | max ms | HTTP 200 |');
  console.log('|---|---|---|---|---|');
  let firstLine = '';
  for (const [name, body] of scenarios) {
    const r = await h2load({ address: server.grpcAddress, body, requests, clients: connections, streams, timeoutMs: 20, dir });
    firstLine ||= r.command;
    console.log(`| ${name} | ${Math.round(r.rps)} | ${r.meanMs.toFixed(2)} | ${r.maxMs.toFixed(1)} | ${r.ok} |`);
  }
  const lat = await latency(server.grpcAddress, 5000);
  console.log(
    `\nsequential latency (one call in flight, 5000 calls): p50 ${lat.p50.toFixed(3)} ms, p99 ${lat.p99.toFixed(3)} ms, p99.9 ${lat.p999.toFixed(3)} ms`,
  );
  const metrics = await (await fetch(`http://${server.httpAddress}/metrics`)).text();
  const decided = [...metrics.matchAll(/^ratelimit_decisions_total\{[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
  const sum = (re: RegExp) => [...metrics.matchAll(re)].reduce((a, m) => a + Number(m[1]), 0);
  console.log(
    `decisions counted by the server: ${decided}; gRPC errors: ${sum(/^ratelimit_grpc_errors_total\{[^}]*\} (\d+)/gm)}; answered by FAILURE_MODE (store slower than the 20 ms deadline): ${sum(/^ratelimit_store_fallbacks_total\{[^}]*\} (\d+)/gm)}`,
  );
  if (backend === 'redis') {
    const get = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN);
    const reqs = get('ratelimit_redis_requests_total');
    const trips = get('ratelimit_redis_round_trips_total');
    console.log(
      `Redis: ${reqs} requests, ${trips} round trips → ${(trips / reqs).toFixed(3)} round trips per request; over-limit cache hits ${get('ratelimit_over_limit_cache_hits_total')}`,
    );
  }
  console.log(`(h2load line: ${firstLine})`);
} finally {
  await server?.stop();
  await redis?.stop();
  rules.remove();
}
