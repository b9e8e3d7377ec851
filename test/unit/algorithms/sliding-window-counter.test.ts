import { describe, expect, it } from 'vitest';
import { firstAtMost, slidingWindowCounter } from '../../../src/algorithms/sliding-window-counter.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { Driver } from './support.js';

const W = 60_000;
const T0 = 1_700_000_040_000; // a minute boundary
const params = (limit: number, windowMs = W) => ({ limit, windowMs, burst: limit });

function evalAt(state: { start: number; current: number; previous: number } | undefined, now: number, limit: number, hits: number) {
  return slidingWindowCounter.evaluate(state, now, params(limit), hits);
}

describe('sliding_window_counter', () => {
  it('weights the previous window: L=10, previous=10, 30% into the window → estimate 7', () => {
    const d = new Driver(slidingWindowCounter, params(10), new FakeClock(T0 + 5_000));
    expect(d.hit(10).allowed).toBe(true);
    d.clock.set(T0 + W + 18_000);
    expect(d.peek(0).remainingIfNotCommitted).toBe(3);
    expect(d.hit(3)).toMatchObject({ allowed: true, remainingIfCommitted: 0 });
    expect(d.hit(1).allowed).toBe(false);
  });

  it('floors the weighted part: 1 ms into the window 10 × 59999/60000 counts as 9', () => {
    const o = evalAt({ start: T0, current: 10, previous: 0 }, T0 + W + 1, 10, 1).outcome;
    expect(o).toMatchObject({ allowed: true, remainingIfNotCommitted: 1, remainingIfCommitted: 0 });
    expect(evalAt({ start: T0, current: 10, previous: 0 }, T0 + W, 10, 1).outcome.allowed).toBe(false);
  });

  it('forgets a state two or more windows old', () => {
    const o = evalAt({ start: T0 - W, current: 10, previous: 10 }, T0 + W, 10, 10);
    expect(o.outcome.allowed).toBe(true);
    expect(o.next).toEqual({ start: T0 + W, current: 10, previous: 0 });
    expect(o.ttlMs).toBe(2 * W);
  });

  it('gives the exact retry time while the previous window decays', () => {
    // previous = 10 at the window start: estimate 10; 5 hits fit once floor(10 × (W − e)/W) <= 5, at e = 24001.
    const s = { start: T0, current: 0, previous: 10 };
    const o = evalAt(s, T0, 10, 5).outcome;
    expect(o).toMatchObject({ allowed: false, resetMs: 24_001 });
    expect(evalAt(s, T0 + 24_000, 10, 5).outcome.allowed).toBe(false);
    expect(evalAt(s, T0 + 24_001, 10, 5).outcome.allowed).toBe(true);
    expect(firstAtMost(10, 5, W)).toBe(24_001);
    expect(evalAt(s, T0, 10, 1).outcome.resetMs).toBe(1);
  });

  it('looks past the rollover when the current window alone is too full', () => {
    // current = 10 of 10, 50 s in: nothing fits in this window; next window the 10 weigh 10 × (W − e)/W.
    const s = { start: T0, current: 10, previous: 0 };
    expect(evalAt(s, T0 + 50_000, 10, 1).outcome.resetMs).toBe(10_001);
    expect(evalAt(s, T0 + W, 10, 1).outcome.allowed).toBe(false);
    expect(evalAt(s, T0 + W + 1, 10, 1).outcome.allowed).toBe(true);
    // 10 hits need the weight at 0: 10(W − e) < W from e = 54001 of the next window.
    expect(evalAt(s, T0 + 50_000, 10, 10).outcome.resetMs).toBe(10_000 + 54_001);
    expect(evalAt(s, T0 + W + 54_000, 10, 10).outcome.allowed).toBe(false);
    expect(evalAt(s, T0 + W + 54_001, 10, 10).outcome.allowed).toBe(true);
  });

  it('reports the time until the estimate is 0 when allowed', () => {
    // 1 hit at a window start: its weight floor(1 × (W − e)/W) is 0 from 1 ms into the next window.
    expect(evalAt(undefined, T0, 10, 1).outcome.resetMs).toBe(W + 1);
    expect(evalAt(undefined, T0, 10, 0).outcome.resetMs).toBe(0);
    // previous = 4 only, 20 s in: weight is 0 once 4(W − e) < W, at e = 45001.
    expect(evalAt({ start: T0, current: 0, previous: 4 }, T0 + 20_000, 10, 0).outcome.resetMs).toBe(25_001);
  });

  it('handles h = 0, h > L and L = 0', () => {
    const s = { start: T0, current: 6, previous: 0 };
    expect(evalAt(s, T0 + 1, 6, 0).outcome).toMatchObject({ allowed: true, remainingIfNotCommitted: 0 });
    const big = evalAt(s, T0 + 1, 6, 7).outcome;
    expect(big).toMatchObject({ allowed: false, resetMs: W - 1 + firstAtMost(6, 0, W) });
    expect(evalAt(undefined, T0 + 1, 0, 1).outcome).toEqual({
      allowed: false,
      remainingIfCommitted: 0,
      remainingIfNotCommitted: 0,
      resetMs: W,
    });
  });

  it('stays exact where previous × (W − e) passes 2^53', () => {
    const year = 31_536_000_000;
    const start = 1_702_944_000_000 - (1_702_944_000_000 % year);
    const state = { start: start - year, current: 4_000_000_000, previous: 0 };
    const now = start + 12_345_678_901;
    const o = slidingWindowCounter.evaluate(state, now, params(4_294_967_295, year), 0).outcome;
    const weighted = (4_000_000_000n * BigInt(year - 12_345_678_901)) / BigInt(year);
    expect(o.remainingIfNotCommitted).toBe(4_294_967_295 - Number(weighted));
  });
});
