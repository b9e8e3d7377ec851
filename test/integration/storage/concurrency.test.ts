/**
 * Three replicas (three RedisStores, three connections) fire 200 concurrent requests at one key with a limit
 * of 100: exactly 100 are admitted, for every algorithm (buckets with burst = L and no time passing, so no
 * refill). Also measures that concurrent requests share round trips (auto-pipelining), and on Redis Cluster
 * that requests spanning two slots never over-admit a shared limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKey } from '../../../src/vocab/keys.js';
import { ALGORITHM_NAMES } from '../../../src/vocab/algorithm-names.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { rawCommand } from '../../support/redis.js';
import { startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';

const T0 = 1_700_002_800_000 + 1_000;
const L = 100;

describe('concurrent replicas on one Redis', () => {
  let handle: RedisStoreHandle;
  let replicas: RedisStore[];
  beforeAll(async () => {
    handle = await startRedisStore('single');
    replicas = [handle.store, createRedisStore(handle.options), createRedisStore(handle.options)];
    await Promise.all(replicas.map((r) => r.waitUntilReady(5000)));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.close()));
    await handle.stop();
  });

  it.each(ALGORITHM_NAMES)('%s: 200 concurrent requests through 3 replicas admit exactly 100', async (algorithm) => {
    const key = counterKey('rl:conc:', 'd', [{ key: 'k', value: `${process.pid}-${algorithm}` }], algorithm, 60_000);
    const before = replicas.map((r) => r.stats());
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => replicas[i % 3]!.apply([{ key, algorithm, limit: L, windowMs: 60_000, burst: L, hits: 1, enforce: true }], T0)),
    );
    expect(outcomes.filter(([o]) => o!.allowed)).toHaveLength(L);
    // every remaining from 99 down to 0 was handed out exactly once
    const remaining = outcomes
      .filter(([o]) => o!.allowed)
      .map(([o]) => o!.remaining)
      .sort((a, b) => a - b);
    expect(remaining).toEqual(Array.from({ length: L }, (_, i) => i));
    // 200 requests, 200 script calls, but far fewer round trips: they share pipelines
    const after = replicas.map((r) => r.stats());
    const calls = after.reduce((n, s, i) => n + s.scriptCalls - before[i]!.scriptCalls, 0);
    const trips = after.reduce((n, s, i) => n + s.roundTrips - before[i]!.roundTrips, 0);
    expect(calls).toBe(200);
    expect(trips).toBeLessThan(20);
  });

  it('reloads the script by itself when Redis lost it (SCRIPT FLUSH, as after a restart or failover)', async () => {
    const key = counterKey('rl:conc:', 'd', [{ key: 'flush', value: String(process.pid) }], 'fixed_window', 60_000);
    const c = { key, algorithm: 'fixed_window' as const, limit: 5, windowMs: 60_000, burst: 1, hits: 1, enforce: true };
    await handle.store.apply([c], T0);
    await rawCommand(handle.port, ['SCRIPT', 'FLUSH']);
    const outcomes = await Promise.all([handle.store.apply([c], T0), handle.store.apply([c], T0)]);
    expect(outcomes.map(([o]) => o!.remaining).sort()).toEqual([2, 3]);
  });
});

describe('concurrent replicas on Redis Cluster', () => {
  let handle: RedisStoreHandle;
  let replicas: RedisStore[];
  beforeAll(async () => {
    handle = await startRedisStore('cluster');
    replicas = [handle.store, createRedisStore(handle.options), createRedisStore(handle.options)];
    await Promise.all(replicas.map((r) => r.waitUntilReady(10_000)));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.close()));
    await handle.stop();
  });

  it('exact per limit when requests span slots: a shared limit of 100 admits exactly 100 of 200', async () => {
    const shared = counterKey('rl:conc:', 'd', [{ key: 'api', value: `${process.pid}` }], 'sliding_window_log', 60_000);
    const check = (key: string, limit: number) => ({
      key,
      algorithm: 'sliding_window_log' as const,
      limit,
      windowMs: 60_000,
      burst: 1,
      hits: 1,
      enforce: true,
    });
    const outcomes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => {
        // each request also has a per-user limit on another descriptor (another slot, usually another node)
        const user = counterKey('rl:conc:', 'd', [{ key: 'user', value: `${process.pid}-${i % 7}` }], 'sliding_window_log', 60_000);
        return replicas[i % 3]!.apply([check(user, 1000), check(shared, L)], T0);
      }),
    );
    expect(outcomes.filter((o) => o.every((x) => x.allowed))).toHaveLength(L);
    const [after] = await replicas[0]!.apply([{ ...check(shared, L), hits: 0 }], T0);
    expect(after!.remaining).toBe(0);
    expect(replicas.reduce((n, r) => n + r.stats().crossSlotRequests, 0)).toBeGreaterThanOrEqual(200);
  });
});
