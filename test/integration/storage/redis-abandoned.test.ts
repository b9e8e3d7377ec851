/**
 * A request answered by the failure mode is never counted later. Redis is paused (CLIENT PAUSE ALL: every
 * client command waits, as with SIGSTOP) while 60 requests against a quota of 100 are rejected by
 * FAILURE_MODE=closed at their deadline; their script calls stay queued and run once Redis resumes. The
 * script sees Redis's clock past each call's expiry and does nothing, so the full quota is still there.
 * (Before the fix, 60 of the 100 were used by requests that had all been rejected.) Without Redis's clock
 * (an ACL user without +time) calls cannot expire; such late commits are then counted in lateCommits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ResilientStore } from '../../../src/storage/resilient.js';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';

const clock = new FakeClock(1_700_000_000_000);
const quota = (hits: number): LimitCheck => ({
  key: 'ab:{user}:fixed_window:60000',
  algorithm: 'fixed_window',
  limit: 100,
  windowMs: 60_000,
  burst: 1,
  hits,
  enforce: true,
});

let redis: RedisServer;
let store: RedisStore;
beforeAll(async () => {
  redis = await startRedis();
  store = createRedisStore({ url: redis.url, clock, commandTimeoutMs: 5000 });
  await store.waitUntilReady(5000);
});
afterAll(async () => {
  await store.close();
  await redis.stop();
});

describe('abandoned calls', () => {
  it('does not count requests rejected by FAILURE_MODE=closed while Redis was paused', async () => {
    const guarded = new ResilientStore(store, { mode: 'closed', expectedReplicas: 1, clock, timeoutMarginMs: 1 });
    expect((await guarded.apply([quota(0)], clock.nowMs()))[0]!.remaining).toBe(100);

    expect(await rawCommand(redis.port, ['CLIENT', 'PAUSE', '800', 'ALL'])).toBe('+OK\r\n');
    const answers = await Promise.all(Array.from({ length: 60 }, () => guarded.apply([quota(1)], clock.nowMs(), { deadlineMs: clock.nowMs() + 100 })));
    expect(answers.every((a) => !a[0]!.allowed)).toBe(true); // all answered by the failure mode
    expect(guarded.stats().fallbacks.closed).toBe(60);

    // Sent on the same connection behind the 60 queued calls, this read runs after them once Redis resumes.
    expect((await store.apply([quota(0)], clock.nowMs()))[0]!.remaining).toBe(100);
    expect(store.stats().expiredCalls).toBe(60);
    expect(store.stats().lateCommits).toBe(0);
  });

  it('counts a commit that lands after the caller gave up in lateCommits (Redis clock unknown: ACL without TIME)', async () => {
    await rawCommand(redis.port, ['ACL', 'SETUSER', 'notime', 'on', '>pw', '~*', '+@all', '-time']);
    const blind = createRedisStore({ url: `redis://notime:pw@127.0.0.1:${redis.port}`, clock, commandTimeoutMs: 5000 });
    try {
      await blind.waitUntilReady(5000);
      const guarded = new ResilientStore(blind, { mode: 'closed', expectedReplicas: 1, clock, timeoutMarginMs: 1 });
      const key: LimitCheck = { ...quota(1), key: 'ab:{late}:fixed_window:60000' };
      expect(await rawCommand(redis.port, ['CLIENT', 'PAUSE', '500', 'ALL'])).toBe('+OK\r\n');
      const answers = await Promise.all(Array.from({ length: 5 }, () => guarded.apply([key], clock.nowMs(), { deadlineMs: clock.nowMs() + 100 })));
      expect(answers.every((a) => !a[0]!.allowed)).toBe(true);
      expect((await blind.apply([{ ...key, hits: 0 }], clock.nowMs()))[0]!.remaining).toBe(95); // counted: no expiry was sent
      expect(blind.stats().lateCommits).toBe(5);
    } finally {
      await blind.close();
    }
  });
});
