/**
 * Inputs that used to kill the process through ioredis: concurrent requests with key counts the store had not
 * used before (a command defined after an auto-pipeline was created), and one huge batch. Each must resolve
 * or reject with a StoreError, never throw an uncaught exception (vitest fails the run on one).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RateLimitError } from '../../../src/vocab/errors.js';
import { MAX_BATCH_CHECKS } from '../../../src/storage/redis/batch-script.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { startRedisStore, type RedisShape, type RedisStoreHandle } from '../../support/redis-stores.js';

function check(key: string): LimitCheck {
  return { key, algorithm: 'fixed_window', limit: 5, windowMs: 60_000, burst: 1, hits: 1, enforce: true };
}
const NOW = 1_700_000_000_000;

describe.each<RedisShape>(['single', 'cluster'])('Redis %s store robustness', (shape) => {
  let h: RedisStoreHandle;
  beforeAll(async () => {
    // At load 22 on 2 cores the 10,000-check script ran past the default 1 s command timeout (both shapes);
    // what this file proves is that such inputs are decided, not how fast, so the command timeout leaves a wide
    // margin. 10,000 stays: it is the size that overflowed the stack when the script's 60,000 arguments were
    // spread through ioredis (a plain spread of 60,000 does not overflow on its own, so a smaller batch would
    // prove less).
    h = await startRedisStore(shape, { commandTimeoutMs: 20_000 });
  }, 60_000);
  afterAll(async () => {
    await h?.store.close();
    await h?.stop();
  });

  it('answers concurrent requests whose key counts it has never used before', async () => {
    // Three requests with one limit and three with three, issued in one event-loop turn (one auto-pipeline).
    const batches: LimitCheck[][] = [];
    for (let r = 0; r < 3; r++) batches.push([check(`rb:{a${r}}:1`)]);
    for (let r = 0; r < 3; r++) batches.push([1, 2, 3].map((i) => check(`rb:{b${r}}:${i}`)));
    // And counts 2, 4, 5, 7 mixed in the next turn, while the first pipeline is in flight.
    const first = batches.map((b) => h.store.apply(b, NOW));
    await Promise.resolve();
    const more = [2, 4, 5, 7].map((n) =>
      h.store.apply(
        Array.from({ length: n }, (_, i) => check(`rb:{c${n}}:${i}`)),
        NOW,
      ),
    );
    const results = await Promise.all([...first, ...more]);
    for (const outcomes of results) {
      expect(outcomes.map((o) => [o.allowed, o.remaining])).toEqual(outcomes.map(() => [true, 4]));
    }
  });

  it('decides one batch of 10 000 checks without a stack overflow', async () => {
    const checks = Array.from({ length: 10_000 }, (_, i) => check(`rb:{huge}:${i}`));
    const outcomes = await h.store.apply(checks, NOW);
    expect(outcomes).toHaveLength(10_000);
    expect(outcomes.filter((o) => !o.allowed || o.remaining !== 4)).toEqual([]);
  }, 30_000);

  it('rejects a batch above the store maximum with a clear INTERNAL error, without touching Redis', async () => {
    const before = h.store.stats().scriptCalls;
    const checks = Array.from({ length: MAX_BATCH_CHECKS + 1 }, (_, i) => check(`rb:{over}:${i}`));
    const error = await h.store.apply(checks, NOW).then(
      () => undefined,
      (e: unknown) => e as RateLimitError,
    );
    expect(error?.code).toBe('INTERNAL');
    expect(error?.message).toContain(`maximum of ${MAX_BATCH_CHECKS}`);
    expect(h.store.stats().scriptCalls).toBe(before);
    expect(h.store.isReady()).toBe(true);
  });
});
