/**
 * The lease store over a real Redis (standalone, Sentinel, Cluster): claims counted in the shared state,
 * local admission without round trips, several limits in one request (a rejected request consumes nothing
 * from any limit), one claim per burst, give-back on expiry, reload and close, and a Redis outage in the
 * middle of a lease. Time is a fake clock; Redis is real.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { LeaseManager } from '../../../src/lease/lease-manager.js';
import { LeaseStore } from '../../../src/lease/lease-store.js';
import { RedisLeaseBackend } from '../../../src/lease/redis-backend.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ResilientStore } from '../../../src/storage/resilient.js';
import { startRedisStore, type RedisShape, type RedisStoreHandle } from '../../support/redis-stores.js';

const START = 1_700_000_040_000; // a multiple of 60 s: windows start here
let run = 0;

function check(name: string, extra: Partial<LimitCheck> = {}): LimitCheck {
  const algorithm = extra.algorithm ?? 'fixed_window';
  const windowMs = extra.windowMs ?? 60_000;
  return {
    key: counterKey('rl:lease:', 'd', [{ key: 'k', value: `${run}-${name}` }], algorithm, windowMs),
    algorithm,
    limit: 20,
    windowMs,
    burst: 20,
    hits: 1,
    enforce: true,
    lease: { size: 5, ttlMs: 1000 },
    ...extra,
  };
}

interface Rig {
  readonly clock: FakeClock;
  readonly redis: RedisStore;
  readonly store: LeaseStore;
  readonly manager: LeaseManager;
}

async function rig(handle: RedisStoreHandle, clock = new FakeClock(START)): Promise<Rig> {
  const redis = createRedisStore({ ...handle.options, clock });
  await redis.waitUntilReady(10_000);
  const manager = new LeaseManager({ backend: new RedisLeaseBackend(redis), clock });
  const resilient = new ResilientStore(redis, { mode: 'closed', expectedReplicas: 1, clock });
  return { clock, redis, manager, store: new LeaseStore(resilient, manager, { clock, sweepIntervalMs: 0 }) };
}

/** What Redis itself says is left of a limit (a read-only batch call on the plain store). */
async function sharedRemaining(redis: RedisStore, c: LimitCheck, nowMs: number): Promise<number> {
  const [o] = await redis.apply([{ ...c, hits: 0, lease: undefined }], nowMs);
  return o!.remaining;
}

for (const shape of ['single', 'sentinel', 'cluster'] as RedisShape[]) {
  describe(`lease store on Redis ${shape}`, () => {
    let handle: RedisStoreHandle;
    const open: Rig[] = [];
    const make = async (clock?: FakeClock) => {
      const r = await rig(handle, clock);
      open.push(r);
      return r;
    };
    beforeAll(async () => {
      handle = await startRedisStore(shape);
    }, 60_000);
    afterEach(async () => {
      await Promise.all(open.splice(0).map((r) => r.store.close()));
      run++;
    });
    afterAll(async () => {
      await handle.store.close();
      await handle.stop();
    });

    it('sweeps ended leases on a timer only once a check with a lease came: rules without leases leave nothing ticking', async () => {
      const { redis, manager } = await make();
      const clock = new FakeClock(START);
      const store = new LeaseStore(new ResilientStore(redis, { mode: 'closed', expectedReplicas: 1, clock }), manager, { clock });
      try {
        await store.apply([check('plain', { lease: undefined })], clock.nowMs());
        expect(store.sweeping).toBe(false);
        await store.apply([check('leased')], clock.nowMs());
        expect(store.sweeping).toBe(true);
      } finally {
        await store.close();
      }
      expect(store.sweeping).toBe(false);
    });

    it('claims size units in Redis, then admits from them without round trips', async () => {
      const { store, redis, clock } = await make();
      const c = check('claim');
      const first = await store.apply([c], clock.nowMs());
      expect(first).toEqual([{ allowed: true, remaining: 19, resetMs: 60_000 }]);
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(15); // 5 leased, counted at the claim
      const trips = redis.stats().roundTrips;
      for (let i = 0; i < 4; i++) expect((await store.apply([c], clock.nowMs()))[0]!.allowed).toBe(true);
      expect(redis.stats().roundTrips).toBe(trips);
      expect((await store.apply([c], clock.nowMs()))[0]!.remaining).toBe(14); // a new claim: 15 before it, 1 used
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(10);
    });

    it('admits exactly the limit across two replicas and rejects locally once the limit is spent', async () => {
      const a = await make();
      const b = await make(a.clock);
      const c = check('two');
      let admitted = 0;
      for (let i = 0; i < 40; i++) if ((await (i % 2 ? a : b).store.apply([c], a.clock.nowMs()))[0]!.allowed) admitted++;
      expect(admitted).toBe(20);
      const trips = a.redis.stats().roundTrips;
      expect((await a.store.apply([c], a.clock.nowMs()))[0]).toMatchObject({ allowed: false, remaining: 0 });
      expect(a.redis.stats().roundTrips).toBe(trips);
    });

    it('makes a burst wait for one claim', async () => {
      const { store, manager, clock } = await make();
      const c = check('burst', { lease: { size: 10, ttlMs: 1000 } });
      const answers = await Promise.all(Array.from({ length: 5 }, () => store.apply([c], clock.nowMs())));
      expect(answers.every((o) => o[0]!.allowed)).toBe(true);
      expect(manager.stats().claims).toBe(1);
    });

    it('admits every request of a burst larger than the lease while the limit allows (regressions: units were checked, then taken; waiters gave up on the lease)', async () => {
      const { store, redis, clock } = await make();
      const c = check('bigburst', { limit: 100 });
      const answers = await Promise.all(Array.from({ length: 60 }, () => store.apply([c], clock.nowMs())));
      expect(answers.filter((o) => o[0]!.allowed)).toHaveLength(60);
      const more = await Promise.all(Array.from({ length: 60 }, () => store.apply([c], clock.nowMs())));
      expect(more.filter((o) => o[0]!.allowed)).toHaveLength(40);
      expect(redis.stats().requests).toBe(0); // every one decided from leases (waiters were sent to Redis directly once)
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(0);
    });

    it('takes nothing from any limit when another limit rejects (leased units go back into the lease)', async () => {
      const { store, redis, clock } = await make();
      const leased = check('multi-leased');
      const plain = check('multi-plain', { limit: 1, lease: undefined });
      expect((await store.apply([leased, plain], clock.nowMs())).map((o) => o.allowed)).toEqual([true, true]);
      const rejected = await store.apply([leased, plain], clock.nowMs());
      expect(rejected.map((o) => o.allowed)).toEqual([true, false]);
      expect(rejected[0]!.remaining).toBe(19); // the unit taken for the rejected request went back
      // A leased limit that rejects: the other limit is read, not counted.
      const tight = check('multi-tight', { limit: 1, lease: { size: 1, ttlMs: 1000 } });
      const other = check('multi-other', { lease: undefined });
      await store.apply([tight], clock.nowMs());
      const r = await store.apply([tight, other], clock.nowMs());
      expect(r.map((o) => o.allowed)).toEqual([false, true]);
      expect(await sharedRemaining(redis, other, clock.nowMs())).toBe(20);
    });

    it('takes no units for a request whose hits do not fit (a rejected request consumes nothing)', async () => {
      const { store, redis, clock } = await make();
      const c = check('toobig', { hits: 8, lease: { size: 5, ttlMs: 1000 } });
      await store.apply([{ ...check('toobig'), hits: 13, lease: { size: 13, ttlMs: 1000 } }], clock.nowMs()); // 7 left
      const before = await sharedRemaining(redis, c, clock.nowMs());
      const other = await make(clock); // another replica asks for 8: it cannot have them
      expect((await other.store.apply([c], clock.nowMs()))[0]!.allowed).toBe(false);
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(before);
    });

    it('gives unused units back when the lease expires, into its own window only', async () => {
      const { store, redis, manager, clock } = await make();
      const c = check('expiry');
      await store.apply([c], clock.nowMs());
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(15);
      clock.advance(1000); // ttl
      manager.sweep();
      await manager.settle();
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(19); // 4 unused came back
      expect(manager.stats()).toMatchObject({ leased: 5, returned: 4, unused: 0, held: 0 });
      // A lease still held when its window ends is lost, not put into the next window.
      await store.apply([c], clock.nowMs());
      clock.set(START + 60_000);
      manager.sweep();
      await manager.settle();
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(20);
      expect(manager.stats().unused).toBe(4);
    });

    it('gives back on close (shutdown) and on giveBackAll (reload)', async () => {
      const first = await make();
      const c = check('close');
      await first.store.apply([c], first.clock.nowMs());
      await first.store.giveBackAll();
      expect(await sharedRemaining(first.redis, c, first.clock.nowMs())).toBe(19);
      await first.store.apply([c], first.clock.nowMs());
      const observer = await make(first.clock);
      expect(await sharedRemaining(observer.redis, c, first.clock.nowMs())).toBe(14);
      await first.store.close();
      open.splice(open.indexOf(first), 1);
      expect(await sharedRemaining(observer.redis, c, first.clock.nowMs())).toBe(18);
    });

    it('gives back a lease whose claim was still in flight when everything was given back (shutdown, reload)', async () => {
      const { store, redis, clock } = await make();
      const c = check('inflight');
      const pending = store.apply([c], clock.nowMs()); // its claim is on the wire
      await store.giveBackAll();
      expect((await pending)[0]!.allowed).toBe(true);
      expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(19);
    });

    it('claims anew under changed terms (a reload that changes the limit)', async () => {
      const { store, redis, clock } = await make();
      const c = check('terms');
      await store.apply([c], clock.nowMs());
      // Once first: Redis then has the give-back script, so the give-back is not retried (EVAL after
      // NOSCRIPT) behind the claim that follows it on the connection.
      await store.giveBackAll();
      await store.apply([c], clock.nowMs()); // 2 used in all
      const raised = { ...c, limit: 40 };
      const o = await store.apply([raised], clock.nowMs());
      expect(o[0]).toMatchObject({ allowed: true, remaining: 37 }); // 4 returned: 38 before the new claim
      await store.giveBackAll();
      expect(await sharedRemaining(redis, raised, clock.nowMs())).toBe(37);
    });

    it('leases from token_bucket and sliding_window_counter', async () => {
      const { store, redis, clock } = await make();
      for (const algorithm of ['token_bucket', 'sliding_window_counter'] as const) {
        const c = check(`alg-${algorithm}`, { algorithm });
        let admitted = 0;
        for (let i = 0; i < 25; i++) if ((await store.apply([c], clock.nowMs()))[0]!.allowed) admitted++;
        expect(admitted).toBe(20);
        expect(await sharedRemaining(redis, c, clock.nowMs())).toBe(0);
      }
    });
  });
}

describe('a Redis outage in the middle of a lease', () => {
  it('keeps admitting from the lease until it is used up, then the failure mode decides', async () => {
    const { startRedis } = await import('../../support/redis.js');
    const server = await startRedis();
    const clock = new FakeClock(START);
    const redis = createRedisStore({ url: server.url, clock, connectTimeoutMs: 200, commandTimeoutMs: 200 });
    try {
      await redis.waitUntilReady(5000);
      const manager = new LeaseManager({ backend: new RedisLeaseBackend(redis), clock });
      const store = new LeaseStore(new ResilientStore(redis, { mode: 'closed', expectedReplicas: 1, clock }), manager, { clock, sweepIntervalMs: 0 });
      const c = check('outage');
      expect((await store.apply([c], clock.nowMs()))[0]!.allowed).toBe(true);
      await server.stopRedis();
      for (let i = 0; i < 4; i++) expect((await store.apply([c], clock.nowMs(), { deadlineMs: clock.nowMs() + 300 }))[0]!.allowed).toBe(true);
      // Lease used up, Redis gone: FAILURE_MODE=closed rejects.
      expect((await store.apply([c], clock.nowMs(), { deadlineMs: clock.nowMs() + 300 }))[0]!.allowed).toBe(false);
      await store.close();
    } finally {
      await server.stop();
    }
  }, 30_000);
});
