/**
 * Redis round trips per request under concurrency, measured two ways:
 * - client side: pipelines written by the RedisStore (stats().roundTrips), i.e. network writes;
 * - server side: Redis's own `total_reads_processed` (socket reads it served) from INFO stats.
 * Each request decides two limits of one descriptor (one script call). C workers run requests back to back
 * against a freshly started local redis-server (or REDIS_URL when set).
 *
 *   npx tsx bench/redis-roundtrips.ts            # defaults: 20000 requests per level
 *   REQUESTS=50000 npx tsx bench/redis-roundtrips.ts
 */
import { counterKey } from '../src/core/keys.js';
import type { LimitCheck } from '../src/storage/counter-store.js';
import { createRedisStore } from '../src/storage/redis/redis-store.js';
import { rawCommand, startRedis } from '../test/support/redis.js';

const REQUESTS = Number(process.env.REQUESTS ?? 20_000);
const LEVELS = [1, 10, 50, 200, 1000];

async function readsProcessed(port: number): Promise<number> {
  const info = await rawCommand(port, ['INFO', 'stats']);
  return Number(/total_reads_processed:(\d+)/.exec(info)?.[1] ?? NaN);
}

function checksFor(i: number): LimitCheck[] {
  const entries = [{ key: 'user', value: `u${i % 5000}` }];
  return [
    { key: counterKey('rl:', 'bench', entries, 'fixed_window', 1000), algorithm: 'fixed_window', limit: 1e9, windowMs: 1000, burst: 1, hits: 1, enforce: true },
    { key: counterKey('rl:', 'bench', entries, 'token_bucket', 60_000), algorithm: 'token_bucket', limit: 1e9, windowMs: 60_000, burst: 1e9, hits: 1, enforce: true },
  ];
}

const server = await startRedis();
const store = createRedisStore({ url: server.url });
await store.waitUntilReady(5000);
console.log(`redis-server ${server.url}, ${REQUESTS} requests per level, 2 limits per request\n`);
console.log('concurrency | req/s   | p50 ms | p99 ms | round trips/request (client) | socket reads/request (server)');
for (const concurrency of LEVELS) {
  const before = store.stats();
  const readsBefore = await readsProcessed(server.port);
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
  const reads = (await readsProcessed(server.port)) - readsBefore - 1;
  latencies.sort((a, b) => a - b);
  const q = (p: number): string => latencies[Math.floor(p * (latencies.length - 1))]!.toFixed(2);
  const requests = after.requests - before.requests;
  console.log(
    `${String(concurrency).padStart(11)} | ${String(Math.round(requests / seconds)).padStart(7)} | ${q(0.5).padStart(6)} | ${q(0.99).padStart(6)} | ` +
      `${((after.roundTrips - before.roundTrips) / requests).toFixed(3).padStart(28)} | ${(reads / requests).toFixed(3).padStart(29)}`,
  );
}
await store.close();
await server.stop();
