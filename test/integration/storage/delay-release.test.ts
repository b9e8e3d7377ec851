/**
 * A delayed request whose call ends gives its reserved slots back on every Redis shape:
 * the engine over a real RedisStore (standalone, Sentinel, Cluster), one request delayed on a token_bucket and
 * a leaky_bucket at once (two keys, on Cluster in other slots), its signal aborted while it waits: both buckets
 * get its hits back, so a newcomer waits one slot, not two, on each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import { FakeTimer } from '../../../src/vocab/timer.js';
import type { RateLimitRequest } from '../../../src/vocab/types.js';
import { closeRedisStores, startRedisStore, type RedisShape, type RedisStoreHandle } from '../../support/redis-stores.js';

// One slot every 2 s on both; Redis keeps the debt for that long in real time (PX), plenty for a loaded machine.
const RULES = `domain: r
descriptors:
  - key: tb
    rate_limit: {unit: minute, requests_per_unit: 30, algorithm: token_bucket, burst: 1, on_limit: {action: delay, max_delay: 5s}}
  - key: lb
    rate_limit: {unit: minute, requests_per_unit: 30, algorithm: leaky_bucket, on_limit: {action: delay, max_delay: 5s}}
`;
const SLOT = 2000;

const request = (value: string): RateLimitRequest => ({
  domain: 'r',
  hitsAddend: 0,
  descriptors: [{ entries: [{ key: 'tb', value }] }, { entries: [{ key: 'lb', value }] }],
});

async function settle(timer: FakeTimer, n: number): Promise<void> {
  for (let i = 0; i < 400 && timer.pending !== n; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(timer.pending).toBe(n);
}

describe.each(['single', 'sentinel', 'cluster'] as RedisShape[])('a cancelled delay releases its slots on Redis (%s)', (shape) => {
  let handle: RedisStoreHandle | undefined;
  beforeAll(async () => {
    handle = await startRedisStore(shape);
  }, 60_000);
  afterAll(async () => {
    await closeRedisStores(handle);
  });

  it('gives the hits back to both buckets: the newcomer waits one slot, not two, and no wait is left', async () => {
    const compiled = compileConfigFiles([{ name: 'r.yaml', text: RULES }], { mergeDomains: false });
    if (!compiled.ok) throw new Error(compiled.errors.join('\n'));
    const clock = new FakeClock(1_700_000_000_000);
    const timer = new FakeTimer(clock);
    const limiter = new RateLimiter({
      store: handle!.store,
      clock,
      timer,
      config: () => compiled.config,
      keyPrefix: `release-${shape}-${Date.now()}:`,
      headers: { mode: 'none', xRateLimit: false },
      nearLimitRatio: 0.8,
    });
    const t0 = clock.nowMs();
    expect((await limiter.decide(request('v'))).overallCode).toBe('OK');
    const controller = new AbortController();
    const a = limiter.decide(request('v'), { call: { signal: controller.signal } });
    await settle(timer, 1);
    expect(timer.nextAt()).toBe(t0 + SLOT);
    controller.abort(new Error('cancelled'));
    await expect(a).rejects.toThrow('cancelled');
    expect(timer.pending).toBe(0);
    const b = limiter.decide(request('v'));
    await settle(timer, 1);
    expect(timer.waitsAt(), 'one slot on both buckets (two without the release)').toEqual([t0 + SLOT]);
    timer.advance(SLOT);
    expect((await b).overallCode).toBe('OK');
  });
});
