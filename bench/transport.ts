/**
 * Transport benchmark: the same ShouldRateLimit call over plaintext TCP, TLS, mutual TLS and a Unix domain
 * socket, each against `ratelimit serve` in its own process (memory store), with a grpc-js client; then the
 * SIGTERM timeline (NOT_SERVING, exit) with a 1 s drain. Prints the figures.
 *
 *   npx tsx bench/transport.ts [--calls 2000] [--concurrent-calls 20000] [--in-flight 64]
 *
 * Bounded: a fixed number of calls, to 127.0.0.1 / a temp socket only. The machine's 2 cores are shared by
 * server and client: compare the rows of one run, not across machines.
 */
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RlsTestClient } from '../test/support/rls-client.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { makeTestPki } from '../test/support/tls.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/transport.ts', { calls: 'string', 'concurrent-calls': 'string', 'in-flight': 'string' });
const CALLS = args.num('calls', 2000);
const CONCURRENT_CALLS = args.num('concurrent-calls', 20_000);
const IN_FLIGHT = args.num('in-flight', 64);

const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'bench.yaml': 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n' });
const pki = await makeTestPki();
const tlsOptions = { 'grpc.ssl_target_name_override': pki.serverName, 'grpc.default_authority': pki.serverName };
const ca = readFileSync(pki.caCert);

const variants: { name: string; env: Record<string, string>; creds: () => grpc.ChannelCredentials; options: grpc.ChannelOptions }[] = [
  { name: 'tcp plaintext', env: {}, creds: () => grpc.credentials.createInsecure(), options: {} },
  { name: 'tcp TLS', env: { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey }, creds: () => grpc.credentials.createSsl(ca), options: tlsOptions },
  {
    name: 'tcp mutual TLS',
    env: { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey, GRPC_TLS_CLIENT_CA: pki.caCert },
    creds: () => grpc.credentials.createSsl(ca, readFileSync(pki.clientKey), readFileSync(pki.clientCert)),
    options: tlsOptions,
  },
  { name: 'unix socket', env: { GRPC_HOST: `unix:${join(dir, 'rls.sock')}` }, creds: () => grpc.credentials.createInsecure(), options: {} },
];

const request = (i: number) => ({ domain: 'bench', descriptors: [{ entries: [{ key: 'user', value: `u${i % 1000}` }] }] });
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

console.log(`transport benchmark: ${CALLS} sequential calls, then ${CONCURRENT_CALLS} calls with ${IN_FLIGHT} in flight (memory store, grpc-js client)`);
console.log('variant          | p50 ms | p99 ms | calls/s (concurrent)');
for (const v of variants) {
  const svc = await startImage({ CONFIG_DIR: dir, ...v.env });
  const client = new RlsTestClient(svc.grpcAddress, v.creds(), v.options);
  try {
    for (let i = 0; i < 200; i++) await client.shouldRateLimit(request(i));
    const times: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t = performance.now();
      await client.shouldRateLimit(request(i));
      times.push(performance.now() - t);
    }
    times.sort((x, y) => x - y);
    let next = 0;
    const started = performance.now();
    const worker = async () => {
      while (next < CONCURRENT_CALLS) await client.shouldRateLimit(request(next++));
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const rps = CONCURRENT_CALLS / ((performance.now() - started) / 1000);
    console.log(`${v.name.padEnd(16)} | ${pct(times, 50).toFixed(3).padStart(6)} | ${pct(times, 99).toFixed(3).padStart(6)} | ${rps.toFixed(0)}`);
  } finally {
    client.close();
    await svc.stop();
  }
}

// SIGTERM timeline with a 1 s drain and nothing in flight.
const svc = await startImage({ CONFIG_DIR: dir, SHUTDOWN_DRAIN_MS: '1000' });
const client = new RlsTestClient(svc.grpcAddress);
await client.shouldRateLimit(request(0));
const watch = client.healthWatch('');
let notServingMs = NaN;
let t0 = 0;
watch.on('data', (m: { status: string }) => {
  if (m.status === 'NOT_SERVING' && Number.isNaN(notServingMs)) notServingMs = performance.now() - t0;
});
watch.on('error', () => {});
await new Promise((resolve) => setTimeout(resolve, 200));
const exited = new Promise<number>((resolve) => svc.child.once('exit', () => resolve(performance.now() - t0)));
t0 = performance.now();
svc.child.kill('SIGTERM');
const exitMs = await exited;
client.close();
console.log(`SIGTERM with SHUTDOWN_DRAIN_MS=1000: Watch saw NOT_SERVING after ${notServingMs.toFixed(1)} ms; process exited after ${exitMs.toFixed(0)} ms`);
pki.remove();
rules.remove();
