/**
 * OverLimitCache: answers only what the store would answer, without asking it. The store behind it is a
 * real MemoryStore (exactness on random traces, every algorithm) and a real Redis (requests saved).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { OverLimitCache } from '../../../src/storage/over-limit-cache.js';
import { ResilientStore } from '../../../src/storage/resilient.js';
import type { RedisStore } from '../../../src/storage/redis/redis-store.js';
import { createRedisStore } from '../../../src/storage/redis/redis-store.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { prng } from '../../support/prng.js';

const T0 = 1_700_002_800_000 + 1_000;
let serial = 0;
function check(limit: number, opts: Partial<LimitCheck> = {}): LimitCheck {
  const algorithm: AlgorithmName = opts.algorithm ?? 'fixed_window';
  const key = counterKey('rl:olc:', 'd', [{ key: 'k', value: `${process.pid}-${++serial}` }], algorithm, 60_000);
  return { key, algorithm, limit, windowMs: 60_000, burst: Math.max(1, limit), hits: 1, enforce: true, ...opts };
}

describe('OverLimitCache on a Redis store', () => {
  let handle: RedisStoreHandle;
  let redis: RedisStore;
  let cache: OverLimitCache;
  beforeAll(async () => {
    handle = await startRedisStore('single');
    redis = handle.store;
    cache = new OverLimitCache(redis, { maxEntries: 2 });
  });
  afterAll(async () => {
    await cache.close();
    await handle.stop();
  });

  it('answers a key known over its limit without Redis, exactly until the reset time', async () => {
    const clock = new FakeClock(T0); // 1 s into a fixed window: over until T0 + 59 s
    const c = check(1);
    await cache.apply([c], clock.nowMs());
    const first = await cache.apply([c], clock.nowMs());
    expect(first).toEqual([{ allowed: false, remaining: 0, resetMs: 59_000 }]);
    const before = redis.stats().requests;
    clock.advance(58_999);
    expect(await cache.apply([c], clock.nowMs())).toEqual([{ allowed: false, remaining: 0, resetMs: 1 }]);
    expect(redis.stats().requests).toBe(before);
    expect(cache.stats().hits).toBe(1);
    clock.advance(1); // the expiry instant itself goes to Redis: a new window, admitted
    expect(await cache.apply([c], clock.nowMs())).toEqual([{ allowed: true, remaining: 0, resetMs: 60_000 }]);
    expect(redis.stats().requests).toBe(before + 1);
  });

  it('sends a batch to Redis when any check is not cached, or is not a single hit, or has another limit', async () => {
    const over = check(1);
    await cache.apply([over], T0);
    await cache.apply([over], T0); // now cached
    const hitsBefore = cache.stats().hits;
    const requestsBefore = redis.stats().requests;
    await cache.apply([over, check(5)], T0);
    await cache.apply([{ ...over, hits: 0 }], T0);
    await cache.apply([{ ...over, hits: 2 }], T0);
    const [raised] = await cache.apply([{ ...over, limit: 2, burst: 2 }], T0); // a reload raised the limit
    expect(raised!.allowed).toBe(true);
    expect(redis.stats().requests).toBe(requestsBefore + 4);
    expect(cache.stats().hits).toBe(hitsBefore);
  });

  it('keeps at most maxEntries, dropping the oldest', async () => {
    const keys = [check(0), check(0), check(0)];
    for (const c of keys) await cache.apply([c], T0);
    expect(cache.stats().entries).toBe(2);
    const before = redis.stats().requests;
    await cache.apply([keys[2]!], T0);
    await cache.apply([keys[0]!], T0); // evicted: asks Redis
    expect(redis.stats().requests).toBe(before + 1);
  });
});

/** A cache over a store on a server of its own, which `body` may stop and restart; all closed after. */
async function onOwnRedis(body: (server: RedisServer, store: RedisStore, cache: OverLimitCache) => Promise<void>): Promise<void> {
  const server = await startRedis();
  const store = createRedisStore({ url: server.url });
  const cache = new OverLimitCache(store, { maxEntries: 10 });
  try {
    await store.waitUntilReady(5000);
    await body(server, store, cache);
  } finally {
    await cache.close();
    await server.stop();
  }
}

/** Polls (real time, at most 5 s) while `up()` holds: the client notices a stopped server by itself. */
async function waitWhile(up: () => boolean): Promise<void> {
  const until = Date.now() + 5000;
  while (up() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

describe('OverLimitCache across a Redis restart', () => {
  it('forgets everything once Redis is unreachable (a restarted Redis is empty), then asks it again', () =>
    onOwnRedis(async (server, store, cache) => {
      const over = check(1);
      await cache.apply([over], T0);
      await cache.apply([over], T0);
      expect(cache.stats().entries).toBe(1);
      await server.stopRedis();
      await waitWhile(() => store.isReady());
      expect(cache.isReady()).toBe(false);
      expect(cache.stats().entries).toBe(0);
      await server.restart();
      await store.waitUntilReady(5000);
      // Redis lost the count, and so did the cache: the same answer from every replica.
      expect(await cache.apply([over], T0)).toEqual([{ allowed: true, remaining: 0, resetMs: 59_000 }]);
    }));

  it('forgets everything during an outage seen only through health(), as ResilientStore sees it (store-factory order)', () =>
    onOwnRedis(async (server, store, cache) => {
      const resilient = new ResilientStore(cache, { mode: 'open', expectedReplicas: 1, clock: new FakeClock(T0) });
      const over = check(1);
      await resilient.apply([over], T0);
      await resilient.apply([over], T0);
      expect(cache.stats().entries).toBe(1);
      await server.stopRedis();
      await waitWhile(() => store.health().connected);
      // answered by FAILURE_MODE=open; nobody calls isReady()
      expect(await resilient.apply([over], T0)).toEqual([{ allowed: true, remaining: 1, resetMs: 60_000 }]);
      await server.restart();
      await store.waitUntilReady(5000);
      // Redis lost the count, and so did the cache.
      expect(await resilient.apply([over], T0)).toEqual([{ allowed: true, remaining: 0, resetMs: 59_000 }]);
    }));
});

describe('OverLimitCache exactness', () => {
  it.each(ALGORITHM_NAMES)('%s: identical outcomes with and without the cache on random traces', async (algorithm) => {
    const random = prng(`olc-${algorithm}`);
    const plain = new MemoryStore({ maxKeys: 1000 });
    const cached = new OverLimitCache(new MemoryStore({ maxKeys: 1000 }), { maxEntries: 50 });
    const keys = Array.from({ length: 4 }, (_, i) => counterKey('rl:', 'd', [{ key: 'k', value: String(i) }], algorithm, 1000));
    let now = T0;
    for (let step = 0; step < 3000; step++) {
      now += random.int(0, 60);
      const n = random.int(1, 2);
      const batch: LimitCheck[] = [];
      for (let j = 0; j < n; j++) {
        const k = random.int(0, keys.length - 1);
        batch.push({
          key: keys[k]!,
          algorithm,
          limit: 3,
          windowMs: 1000,
          // one burst per key, as one rule gives (a rule change during a rollout may differ: see the module)
          burst: k < 2 ? 3 : 1,
          hits: random.chance(0.85) ? 1 : random.int(0, 3),
          enforce: random.chance(0.9),
        });
      }
      const expected = await plain.apply(batch, now);
      expect(await cached.apply(batch, now), `step ${step}`).toEqual(expected);
    }
    expect(cached.stats().hits).toBeGreaterThan(100);
  });
});
