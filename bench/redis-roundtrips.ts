/**
 * Redis round trips per request under concurrency, measured two ways:
 * - client side: pipelines written by the RedisStore (stats().roundTrips), i.e. network writes;
 * - server side (standalone): Redis's own `total_reads_processed` (socket reads it served) from INFO stats.
 * C workers run requests back to back against freshly started local servers: a standalone redis-server,
 * then a 3-master Redis Cluster. Each request decides two limits of one descriptor (one slot), and on the
 * Cluster also requests with two descriptors (two slots: evaluate, then commit, on each).
 *
 *   npx tsx bench/redis-roundtrips.ts            # 20000 requests per level
 *   REQUESTS=50000 npx tsx bench/redis-roundtrips.ts
 */
import { counterKey } from '../src/vocab/keys.js';
import type { LimitCheck } from '../src/storage/counter-store.js';
import { createRedisStore, type RedisStore } from '../src/storage/redis/redis-store.js';
import { rawCommand, startCluster, startRedis } from '../test/support/redis.js';

const REQUESTS = Number(process.env.REQUESTS ?? 20_000);

async function readsProcessed(port: number): Promise<number> {
  const info = await rawCommand(port, ['INFO', 'stats']);
  return Number(/total_reads_processed:(\d+)/.exec(info)?.[1] ?? NaN);
}

/** Two limits (fixed window per second, token bucket per minute) of one descriptor. */
function limitsOf(descriptor: string, user: number): LimitCheck[] {
  const entries = [{ key: descriptor, value: `u${user}` }];
  return [
    { key: counterKey('rl:', 'bench', entries, 'fixed_window', 1000), algorithm: 'fixed_window', limit: 1e9, windowMs: 1000, burst: 1, hits: 1, enforce: true },
    {
      key: counterKey('rl:', 'bench', entries, 'token_bucket', 60_000),
      algorithm: 'token_bucket',
      limit: 1e9,
      windowMs: 60_000,
      burst: 1e9,
      hits: 1,
      enforce: true,
    },
  ];
}
const oneDescriptor = (i: number): LimitCheck[] => limitsOf('user', i % 5000);
const twoDescriptors = (i: number): LimitCheck[] => [...limitsOf('user', i % 5000), ...limitsOf('ip', i % 3000)];

function row(cells: (string | number)[]): string {
  return `| ${cells.map(String).join(' | ')} |`;
}

async function measure(store: RedisStore, label: string, checksFor: (i: number) => LimitCheck[], concurrency: number, serverPort?: number): Promise<string> {
  const before = store.stats();
  const readsBefore = serverPort === undefined ? 0 : await readsProcessed(serverPort);
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        const t = performance.now();
        await store.apply(checksFor(i), Date.now());
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = store.stats();
  // the INFO call that reads the figure is one read of its own
  const reads = serverPort === undefined ? undefined : (await readsProcessed(serverPort)) - readsBefore - 1;
  latencies.sort((a, b) => a - b);
  const q = (p: number): string => latencies[Math.floor(p * (latencies.length - 1))]!.toFixed(2);
  const requests = after.requests - before.requests;
  return row([
    label,
    concurrency,
    Math.round(requests / seconds),
    q(0.5),
    q(0.99),
    ((after.scriptCalls - before.scriptCalls) / requests).toFixed(2),
    ((after.roundTrips - before.roundTrips) / requests).toFixed(3),
    reads === undefined ? '' : (reads / requests).toFixed(3),
  ]);
}

console.log(`${REQUESTS} requests per row\n`);
console.log(
  row(['setup', 'concurrency', 'requests/s', 'p50 ms', 'p99 ms', 'script calls/request', 'round trips/request (client)', 'socket reads/request (Redis)']),
);
console.log(row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']));

const server = await startRedis();
const single = createRedisStore({ url: server.url });
await single.waitUntilReady(5000);
for (const c of [1, 10, 50, 200, 1000]) console.log(await measure(single, 'standalone, 1 descriptor', oneDescriptor, c, server.port));
await single.close();
await server.stop();

const cluster = await startCluster();
const clustered = createRedisStore({ url: `redis://127.0.0.1:${cluster.nodes[0]!.port}`, type: 'cluster', clusterNodes: cluster.nodes });
await clustered.waitUntilReady(10_000);
for (const c of [1, 50, 200]) console.log(await measure(clustered, 'cluster, 1 descriptor', oneDescriptor, c));
for (const c of [1, 50, 200]) console.log(await measure(clustered, 'cluster, 2 descriptors', twoDescriptors, c));
await clustered.close();
await cluster.stop();
