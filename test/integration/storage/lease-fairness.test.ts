/**
 * Leases must not change what other requests get, on a real Redis with fake clocks:
 * - a request of more hits than a lease holds is decided against the shared counter and leaves the lease
 *   alone: repeated 101-hit requests no longer black out a key's ordinary requests, and a request that
 *   fits is admitted after one that did not;
 * - a claim made in a window that has ended by the time Redis decides it is decided in the window Redis is
 *   in: it never writes an older window's count over a newer one (no overshoot).
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
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';

const START = 1_700_000_040_000; // a multiple of 60 s: windows start here
let run = 0;

function check(name: string, extra: Partial<LimitCheck> = {}): LimitCheck {
  const algorithm = extra.algorithm ?? 'fixed_window';
  return {
    key: counterKey('rl:fair:', 'd', [{ key: 'k', value: `${run}-${name}` }], algorithm, 60_000),
    algorithm,
    limit: 100,
    windowMs: 60_000,
    burst: 100,
    hits: 1,
    enforce: true,
    lease: { size: 10, ttlMs: 1000 },
    ...extra,
  };
}

interface Replica {
  readonly clock: FakeClock;
  readonly redis: RedisStore;
  readonly store: LeaseStore;
}

let handle: RedisStoreHandle;
const open: Replica[] = [];

async function replica(clock = new FakeClock(START)): Promise<Replica> {
  const redis = createRedisStore({ ...handle.options, clock });
  await redis.waitUntilReady(10_000);
  const manager = new LeaseManager({ backend: new RedisLeaseBackend(redis), clock });
  const resilient = new ResilientStore(redis, { mode: 'closed', expectedReplicas: 1, clock });
  const r = { clock, redis, store: new LeaseStore(resilient, manager, { clock, sweepIntervalMs: 0 }) };
  open.push(r);
  return r;
}

async function admitted(r: Replica, c: LimitCheck, hits: number): Promise<boolean> {
  const [o] = await r.store.apply([{ ...c, hits }], r.clock.nowMs());
  return o!.allowed;
}

beforeAll(async () => {
  handle = await startRedisStore('single');
}, 60_000);
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.store.close()));
  run++;
});
afterAll(async () => {
  await closeRedisStores(handle);
});

describe('a request too big for a lease', () => {
  it('a 101-hit request every 80 ms no longer blacks out the key: 100 of 100 ordinary requests are admitted', async () => {
    const r = await replica();
    const c = check('blackout');
    let ordinary = 0;
    let big = 0;
    for (let i = 0; i < 100; i++) {
      r.clock.set(START + i * 10);
      if (i % 8 === 0 && (await admitted(r, c, 101))) big++;
      if (await admitted(r, c, 1)) ordinary++;
    }
    expect(big).toBe(0);
    expect(ordinary).toBe(100);
  });

  it('after a 101-hit request, a 70-hit request that fits is admitted, and the lease still serves the rest', async () => {
    const r = await replica();
    const c = check('fits');
    expect(await admitted(r, c, 101)).toBe(false);
    expect(await admitted(r, c, 70)).toBe(true);
    let ones = 0;
    for (let i = 0; i < 40; i++) if (await admitted(r, c, 1)) ones++;
    expect(ones).toBe(30);
    const [shared] = await r.redis.apply([{ ...c, hits: 0, lease: undefined }], r.clock.nowMs());
    expect(shared!.remaining).toBe(0);
  });

  it('a claim that got nothing for a big request does not refuse a small one that fits what is left', async () => {
    const r = await replica();
    const c = check('short', { lease: { size: 50, ttlMs: 1000 } });
    await r.redis.apply([{ ...c, hits: 60, lease: undefined }], START); // 40 left
    expect(await admitted(r, c, 45)).toBe(false);
    expect(await admitted(r, c, 30)).toBe(true);
    expect(await admitted(r, c, 10)).toBe(true);
    expect(await admitted(r, c, 1)).toBe(false);
  });
});

describe('a claim decided after its window ended', () => {
  for (const algorithm of ['fixed_window', 'sliding_window_counter'] as const) {
    it(`${algorithm}: is decided in the window Redis is in and never overwrites its count`, async () => {
      const c = check(`stale-${algorithm}`, { algorithm, limit: 1000, burst: 1000, lease: { size: 50, ttlMs: 1000 } });
      // Replica A, already in the next window, fills the limit there.
      const a = await replica(new FakeClock(START + 60_000 + 1));
      const [filled] = await a.redis.apply([{ ...c, hits: 1000, lease: undefined }], a.clock.nowMs());
      expect(filled!.allowed).toBe(true);
      // Replica B's claim was made 5 ms before that window began and reaches Redis after A's hits.
      const b = await replica(new FakeClock(START + 60_000 - 5));
      expect(await admitted(b, c, 1)).toBe(false);
      // The new window's count is whole: nothing is left for A.
      const [after] = await a.redis.apply([{ ...c, hits: 0, lease: undefined }], a.clock.nowMs());
      expect(after!.remaining).toBe(0);
      expect(await admitted(a, c, 1)).toBe(false);
    });
  }
});
