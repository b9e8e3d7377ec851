/**
 * ResilientStore against a real Redis that is down, paused (slower than the deadline) or up. Failures are
 * real (a stopped server, CLIENT PAUSE), not simulated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock, systemClock } from '../../../src/vocab/clock.js';
import { StoreError } from '../../../src/vocab/errors.js';
import { counterKey } from '../../../src/vocab/keys.js';
import type { AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { localShare, ResilientStore, type FailureMode } from '../../../src/storage/resilient.js';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';

const T0 = 1_700_002_800_000 + 1_000;
let serial = 0;
function check(limit: number, opts: Partial<LimitCheck> = {}): LimitCheck {
  const algorithm: AlgorithmName = opts.algorithm ?? 'fixed_window';
  const key = counterKey('rl:res:', 'd', [{ key: 'k', value: `${process.pid}-${++serial}` }], algorithm, 60_000);
  return { key, algorithm, limit, windowMs: 60_000, burst: Math.max(1, limit), hits: 1, enforce: true, ...opts };
}

describe('localShare', () => {
  it('divides by the replicas, rounds down, keeps at least 1, and keeps 0 at 0', () => {
    expect(localShare(10, 3)).toBe(3);
    expect(localShare(2, 3)).toBe(1);
    expect(localShare(0, 3)).toBe(0);
    expect(localShare(7, 1)).toBe(7);
  });
});

describe('ResilientStore', () => {
  let redis: RedisServer;
  let primary: RedisStore;
  const fallbacks: [FailureMode, string][] = [];
  const make = (mode: FailureMode, local?: MemoryStore): ResilientStore =>
    new ResilientStore(primary, {
      mode,
      expectedReplicas: 3,
      clock: systemClock,
      ...(local ? { local } : {}),
      onFallback: (m, reason) => fallbacks.push([m, reason]),
    });

  beforeAll(async () => {
    redis = await startRedis();
    primary = createRedisStore({ url: redis.url, commandTimeoutMs: 2000 });
    await primary.waitUntilReady(5000);
  });
  afterAll(async () => {
    await primary.close();
    await redis.stop();
  });

  it('rejects bad options', () => {
    expect(() => new ResilientStore(primary, { mode: 'local', expectedReplicas: 1, clock: systemClock })).toThrow(/local store/);
    expect(() => new ResilientStore(primary, { mode: 'open', expectedReplicas: 0, clock: systemClock })).toThrow(/expectedReplicas/);
  });

  it('answers from the primary while it is up, without falling back', async () => {
    fallbacks.length = 0;
    const store = make('closed');
    const c = check(2);
    expect(await store.apply([c], T0, { deadlineMs: Date.now() + 1000 })).toEqual([{ allowed: true, remaining: 1, resetMs: 59_000 }]);
    expect(fallbacks).toEqual([]);
    expect(store.isReady()).toBe(true);
  });

  it('answers by the mode when the primary is slower than the deadline, and never after the deadline', async () => {
    fallbacks.length = 0;
    const local = new MemoryStore({ maxKeys: 100 });
    const stores = { open: make('open'), closed: make('closed'), local: make('local', local) };
    await rawCommand(redis.port, ['CLIENT', 'PAUSE', '600', 'ALL']);
    try {
      for (const mode of ['open', 'closed', 'local'] as const) {
        const c = check(9);
        const started = Date.now();
        const deadlineMs = started + 120;
        const [o] = await stores[mode].apply([c], T0, { deadlineMs });
        expect(Date.now()).toBeLessThanOrEqual(deadlineMs);
        expect(Date.now() - started).toBeGreaterThanOrEqual(100);
        if (mode === 'open') expect(o).toEqual({ allowed: true, remaining: 9, resetMs: 60_000 });
        if (mode === 'closed') expect(o).toEqual({ allowed: false, remaining: 0, resetMs: 60_000, storeFailure: true });
        if (mode === 'local') expect(o).toMatchObject({ allowed: true, remaining: 2 }); // 9 / 3 replicas = 3
      }
    } finally {
      await local.close();
    }
    expect(fallbacks).toEqual([
      ['open', 'timeout'],
      ['closed', 'timeout'],
      ['local', 'timeout'],
    ]);
    // let the pause end so later tests see Redis again
    await new Promise((r) => setTimeout(r, 600));
  });

  it("with primaryKeepsDeadline (as store-factory builds it on Redis) answers by the mode by the deadline, from the Redis store's own guard", async () => {
    fallbacks.length = 0;
    const store = new ResilientStore(primary, {
      mode: 'closed',
      expectedReplicas: 1,
      clock: systemClock,
      primaryKeepsDeadline: true,
      onFallback: (m, reason) => fallbacks.push([m, reason]),
    });
    await rawCommand(redis.port, ['CLIENT', 'PAUSE', '400', 'ALL']);
    const started = Date.now();
    const [slow] = await store.apply([check(9)], T0, { deadlineMs: started + 120 });
    expect(Date.now()).toBeLessThanOrEqual(started + 120);
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(slow).toEqual({ allowed: false, remaining: 0, resetMs: 60_000, storeFailure: true });
    const passed = Date.now();
    const [late] = await store.apply([check(4)], T0, { deadlineMs: passed - 1 });
    expect(late).toEqual({ allowed: false, remaining: 0, resetMs: 60_000, storeFailure: true });
    expect(Date.now() - passed).toBeLessThan(50);
    expect(fallbacks).toEqual([
      ['closed', 'timeout'],
      ['closed', 'timeout'],
    ]);
    await new Promise((r) => setTimeout(r, 400));
  });

  it('gives up at once when the deadline has already passed', async () => {
    fallbacks.length = 0;
    const started = Date.now();
    const [o] = await make('open').apply([check(4)], T0, { deadlineMs: started - 1 });
    expect(o).toEqual({ allowed: true, remaining: 4, resetMs: 60_000 });
    expect(Date.now() - started).toBeLessThan(50);
    expect(fallbacks).toEqual([['open', 'timeout']]);
  });

  describe('while Redis is down', () => {
    beforeAll(async () => {
      await redis.stopRedis();
      const until = Date.now() + 2000;
      while (primary.isReady() && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    });
    afterAll(async () => {
      await redis.restart();
      await primary.waitUntilReady(5000);
    });

    it('the primary itself rejects with a StoreError, fast', async () => {
      const started = Date.now();
      await expect(primary.apply([check(1)], T0)).rejects.toBeInstanceOf(StoreError);
      expect(Date.now() - started).toBeLessThan(50);
    });

    it('open: every check allowed with the full limit; ready', async () => {
      const store = make('open');
      expect(store.isReady()).toBe(true);
      const outcomes = await store.apply([check(5), check(0, { enforce: false })], T0);
      expect(outcomes).toEqual([
        { allowed: true, remaining: 5, resetMs: 60_000 },
        { allowed: true, remaining: 0, resetMs: 60_000 },
      ]);
    });

    it('closed: every enforced check rejected, shadow checks answered as open; not ready', async () => {
      const store = make('closed');
      expect(store.isReady()).toBe(false);
      const outcomes = await store.apply([check(5), check(3, { enforce: false })], T0);
      expect(outcomes).toEqual([
        { allowed: false, remaining: 0, resetMs: 60_000, storeFailure: true }, // marked: ext_authz answers it with a 503
        { allowed: true, remaining: 3, resetMs: 60_000 },
      ]);
    });

    it('local: counts in process at limit / expected replicas (0 stays 0)', async () => {
      const local = new MemoryStore({ maxKeys: 100 });
      const store = make('local', local);
      const clock = new FakeClock(T0);
      const c = check(10, { algorithm: 'sliding_window_log' });
      const allowed: boolean[] = [];
      for (let i = 0; i < 5; i++) allowed.push((await store.apply([c], clock.nowMs()))[0]!.allowed);
      expect(allowed).toEqual([true, true, true, false, false]); // floor(10 / 3) = 3
      expect((await store.apply([check(0)], T0))[0]!.allowed).toBe(false);
      expect((await store.apply([check(2)], T0))[0]!.allowed).toBe(true); // at least 1
      expect(store.isReady()).toBe(true);
      await local.close();
    });

    it('rejects with a StoreError when the local fallback cannot answer either', async () => {
      const local = new MemoryStore({ maxKeys: 10 });
      await local.close(); // a closed memory store refuses to answer
      await expect(make('local', local).apply([check(5)], T0)).rejects.toMatchObject({
        name: 'StoreError',
        code: 'STORE_UNAVAILABLE',
      });
    });
  });
});
