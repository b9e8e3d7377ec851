import { describe, expect, it } from 'vitest';
import { fixedWindow } from '../../../src/algorithms/fixed-window.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { Driver } from './support.js';

const MINUTE = 60_000;
/** An epoch-aligned minute boundary. */
const T0 = 1_700_000_040_000;

function driver(limit: number, windowMs = MINUTE, at = T0): Driver<unknown> {
  return new Driver(fixedWindow, { limit, windowMs, burst: limit }, new FakeClock(at));
}

describe('fixed_window', () => {
  it('aligns windows to the epoch like envoyproxy/ratelimit', () => {
    expect(T0 % MINUTE).toBe(0);
    const d = driver(3, MINUTE, T0 + 25_000);
    const o = d.hit();
    expect(o).toEqual({ allowed: true, remainingIfCommitted: 2, remainingIfNotCommitted: 3, resetMs: 35_000 });
    // An hour window starts on the hour (UTC), whatever the first request's time.
    const h = driver(5, 3_600_000, 1_700_001_234_567);
    expect(h.hit().resetMs).toBe(3_600_000 - (1_700_001_234_567 % 3_600_000));
  });

  it('counts up to L per window, then rejects until the window ends', () => {
    const d = driver(3);
    d.clock.advance(10_000);
    expect([1, 2, 3].map(() => d.hit().remainingIfCommitted)).toEqual([2, 1, 0]);
    const rejected = d.hit();
    expect(rejected).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 50_000 });
    d.clock.advance(49_999);
    expect(d.hit().allowed).toBe(false);
    d.clock.advance(1);
    expect(d.hit()).toEqual({ allowed: true, remainingIfCommitted: 2, remainingIfNotCommitted: 3, resetMs: MINUTE });
  });

  it('admits the classic double burst at a window boundary (2L within 2 ms)', () => {
    const d = driver(10, MINUTE, T0 + MINUTE - 1);
    let admitted = 0;
    for (let i = 0; i < 15; i++) if (d.hit().allowed) admitted++;
    expect(admitted).toBe(10);
    d.clock.advance(1);
    for (let i = 0; i < 15; i++) if (d.hit().allowed) admitted++;
    expect(admitted).toBe(20);
  });

  it('counts hits, and h = 0 checks without counting', () => {
    const d = driver(10);
    expect(d.hit(7).remainingIfCommitted).toBe(3);
    expect(d.hit(0)).toEqual({ allowed: true, remainingIfCommitted: 3, remainingIfNotCommitted: 3, resetMs: MINUTE });
    expect(d.hit(4)).toEqual({ allowed: false, remainingIfCommitted: 3, remainingIfNotCommitted: 3, resetMs: MINUTE });
    expect(d.hit(3).remainingIfCommitted).toBe(0);
    expect(d.hit(0).allowed).toBe(true); // count == L is not exceeded
  });

  it('h = 0 is rejected when the count already exceeds a lowered limit', () => {
    const d = new Driver(fixedWindow, { limit: 10, windowMs: MINUTE, burst: 10 }, new FakeClock(T0));
    d.hit(8);
    const lowered = fixedWindow.evaluate(d.state, T0, { limit: 5, windowMs: MINUTE, burst: 5 }, 0);
    expect(lowered.outcome).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: MINUTE });
  });

  it('rejects h > L for good and L = 0 always, with the window end as reset', () => {
    const d = driver(5, MINUTE, T0 + 1_000);
    expect(d.hit(6)).toEqual({ allowed: false, remainingIfCommitted: 5, remainingIfNotCommitted: 5, resetMs: 59_000 });
    const zero = driver(0, MINUTE, T0 + 1_000);
    expect(zero.hit(1)).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 59_000 });
    expect(zero.hit(0).allowed).toBe(true);
  });

  it('ignores a state of an older window and keeps it only until the window ends', () => {
    const r = fixedWindow.evaluate({ start: T0 - MINUTE, count: 99 }, T0 + 5, { limit: 3, windowMs: MINUTE, burst: 3 }, 1);
    expect(r.outcome.allowed).toBe(true);
    expect(r.next).toEqual({ start: T0, count: 1 });
    expect(r.ttlMs).toBe(MINUTE - 5);
  });

  it('decides a call from a clock behind the stored window in that window, never writing an older one over it', () => {
    const params = { limit: 10, windowMs: 60_000, burst: 10 };
    const stored = { start: 1_700_000_040_000, count: 10 };
    const late = fixedWindow.evaluate(stored, stored.start - 5, params, 1);
    expect(late.outcome.allowed).toBe(false);
    expect(late.outcome.remainingIfNotCommitted).toBe(0);
    expect(late.outcome.resetMs).toBe(60_005);
    expect(late.next).toEqual({ start: stored.start, count: 11 });
  });
});
