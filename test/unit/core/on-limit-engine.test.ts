/**
 * The engine's side of on_limit on a real MemoryStore with a fake clock and timer: which limit speaks when
 * several reject, the HTTP status and location ext_authz reads, check-only calls that change nothing,
 * shadow limits that never delay, and the delay bounded by the caller's deadline.
 */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import { FakeTimer } from '../../../src/vocab/timer.js';
import type { RateLimitDecision, RateLimitRequest } from '../../../src/vocab/types.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';

const RULES = `domain: e
descriptors:
  - key: short
    rate_limit:
      unit: minute
      requests_per_unit: 1
      on_limit: {body: 'short {{retry_after}}', headers: {x-who: short}}
  - key: long
    rate_limit:
      unit: hour
      requests_per_unit: 1
      on_limit: {body: 'long {{retry_after}}', status: 503, headers: {x-who: long}}
  - key: go
    rate_limit:
      unit: minute
      requests_per_unit: 1
      on_limit: {action: redirect, location: 'https://x.test/{{name}}?d={{descriptor}}'}
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: leaky_bucket
      on_limit: {action: delay, max_delay: 5s}
  - key: slow
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: leaky_bucket
      on_limit: {action: delay, max_delay: 5s, retry: exponential_backoff}
`;

function engine(delayMarginMs?: number) {
  const result = compileConfigFiles([{ name: 'e.yaml', text: RULES }], { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const clock = new FakeClock(1_700_000_000_000 + 30_000);
  const timer = new FakeTimer(clock);
  const limiter = new RateLimiter({
    store: new MemoryStore({ maxKeys: 1000 }),
    clock,
    timer,
    config: () => result.config,
    keyPrefix: 't:',
    headers: { mode: 'none', xRateLimit: false },
    nearLimitRatio: 0.8,
    ...(delayMarginMs === undefined ? {} : { delayMarginMs: () => delayMarginMs }),
  });
  return { limiter, clock, timer };
}

const request = (...descriptors: [string, string][]): RateLimitRequest => ({
  domain: 'e',
  hitsAddend: 0,
  descriptors: descriptors.map(([key, value]) => ({ entries: [{ key, value }] })),
});
const text = (d: RateLimitDecision) => new TextDecoder().decode(d.rawBody);

describe('on_limit in the engine', () => {
  it('lets the rejecting limit with the longest wait speak for body, headers, retry-after and status', async () => {
    const { limiter } = engine();
    await limiter.decide(request(['short', 'a'], ['long', 'a']));
    const d = await limiter.decide(request(['short', 'a'], ['long', 'a']));
    expect(d.overallCode).toBe('OVER_LIMIT');
    // the hour limit waits longer (until its hour ends, 2770 s) than the minute limit (30 s)
    expect(text(d)).toBe('long 2770');
    expect(d.httpStatus).toBe(503);
    expect(d.responseHeadersToAdd).toEqual([
      { key: 'retry-after', value: '2770' },
      { key: 'content-type', value: 'text/plain; charset=utf-8' },
      { key: 'x-who', value: 'long' },
    ]);
  });

  it('redirect: location with URL-encoded values and status 302 by default for ext_authz', async () => {
    const { limiter } = engine();
    await limiter.decide(request(['go', 'a b&c']));
    const d = await limiter.decide(request(['go', 'a b&c']));
    expect(d.overallCode).toBe('OVER_LIMIT');
    expect(d.httpStatus).toBe(302);
    expect(d.responseHeadersToAdd).toContainEqual({ key: 'location', value: 'https://x.test/e.go?d=go%3Da%20b%26c' });
  });

  it('a check-only call neither reserves a slot, nor waits, nor counts a rejection', async () => {
    const { limiter, timer } = engine();
    await limiter.decide(request(['slow', 'x']));
    for (let i = 0; i < 3; i++) {
      const d = await limiter.decide(request(['slow', 'x']), { checkOnly: true });
      expect(d.overallCode).toBe('OVER_LIMIT');
    }
    expect(timer.pending).toBe(0);
    // the real next request still finds the slot 1 s out: nothing was reserved by the check-only calls
    const next = limiter.decide(request(['slow', 'x']));
    await Promise.resolve();
    expect(timer.nextAt()).toBe(timer.clock.nowMs() + 1000);
    timer.advance(1000);
    expect((await next).overallCode).toBe('OK');
  });

  it('never delays for a shadow-mode limit (it only reports)', async () => {
    const { limiter, timer } = engine();
    for (let i = 0; i < 3; i++) expect((await limiter.decide(request(['shadow', 'x']))).overallCode).toBe('OK');
    expect(timer.pending).toBe(0);
  });

  it('bounds the delay by the deadline: a wait beyond it is rejected at once, with its exact retry and backoff', async () => {
    const { limiter, clock } = engine();
    await limiter.decide(request(['slow', 'y']));
    const d = await limiter.decide(request(['slow', 'y']), { deadlineMs: clock.nowMs() + 999 });
    expect(d.overallCode).toBe('OVER_LIMIT');
    expect(d.responseHeadersToAdd).toContainEqual({ key: 'retry-after', value: '1' });
    const again = await limiter.decide(request(['slow', 'y']), { deadlineMs: clock.nowMs() + 500 });
    expect(again.responseHeadersToAdd).toContainEqual({ key: 'retry-after', value: '2' });
  });

  it('grants a delay only when it ends the delay margin before the deadline: otherwise rejected at once, nothing reserved', async () => {
    // The slot is 1 s out; the deadline 1005 ms; the measured margin for a delayed answer 10 ms: 5 ms would be
    // left, less than the lateness the margin says a timer may have, so the answer could miss the deadline.
    const { limiter, clock, timer } = engine(10);
    await limiter.decide(request(['slow', 'm']));
    const waiting = new Promise<'waiting for a slot'>((resolve) => setTimeout(() => resolve('waiting for a slot'), 200));
    const near = await Promise.race([limiter.decide(request(['slow', 'm']), { deadlineMs: clock.nowMs() + 1005 }), waiting]);
    if (near === 'waiting for a slot') timer.advance(1000); // (the old answer: a delay granted; ends its wait)
    expect(near === 'waiting for a slot' ? near : near.overallCode).toBe('OVER_LIMIT');
    if (near === 'waiting for a slot') return;
    expect(near.responseHeadersToAdd).toContainEqual({ key: 'retry-after', value: '1' });
    expect(timer.pending).toBe(0);
    // With the margin to spare the same slot is granted: the rejection reserved nothing.
    const room = limiter.decide(request(['slow', 'm']), { deadlineMs: clock.nowMs() + 1010 });
    await eventuallyPending(timer, 1);
    expect(timer.waitsAt()).toEqual([clock.nowMs() + 1000]);
    timer.advance(1000);
    expect((await room).overallCode).toBe('OK');
  });

  it('a delayed request whose call ends releases its slot: the wait stops and the next request takes it', async () => {
    const { limiter, timer } = engine();
    const now = timer.clock.nowMs();
    await limiter.decide(request(['slow', 'c']));
    const controller = new AbortController();
    const a = limiter.decide(request(['slow', 'c']), { call: { signal: controller.signal } });
    const b = limiter.decide(request(['slow', 'c']));
    await eventuallyPending(timer, 2);
    expect(timer.waitsAt()).toEqual([now + 1000, now + 2000]);
    controller.abort(new Error('cancelled'));
    await expect(a).rejects.toThrow('cancelled');
    // B keeps its slot; a newcomer gets the one A gave back (2 s out again, not 3 s).
    expect(timer.waitsAt()).toEqual([now + 2000]);
    const c = limiter.decide(request(['slow', 'c']));
    await eventuallyPending(timer, 2);
    expect(timer.waitsAt()).toEqual([now + 2000, now + 2000]);
    timer.advance(2000);
    expect((await b).overallCode).toBe('OK');
    expect((await c).overallCode).toBe('OK');
  });

  it('a call that ended before its delay began waits for nothing and reserves nothing', async () => {
    const { limiter, timer } = engine();
    const now = timer.clock.nowMs();
    await limiter.decide(request(['slow', 'd']));
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await expect(limiter.decide(request(['slow', 'd']), { call: { signal: controller.signal } })).rejects.toThrow('gone');
    expect(timer.pending).toBe(0);
    const next = limiter.decide(request(['slow', 'd']));
    await eventuallyPending(timer, 1);
    expect(timer.waitsAt()).toEqual([now + 1000]);
    timer.advance(1000);
    expect((await next).overallCode).toBe('OK');
  });
});

/** The store call is a resolved promise: a few turns of the microtask queue bring a decision to its wait. */
async function eventuallyPending(timer: FakeTimer, n: number): Promise<void> {
  for (let i = 0; i < 100 && timer.pending < n; i++) await Promise.resolve();
  expect(timer.pending).toBe(n);
}
