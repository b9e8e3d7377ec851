import { describe, expect, it } from 'vitest';
import { slidingWindowLog, type SlidingWindowLogState } from '../../../src/algorithms/sliding-window-log.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { Driver } from './support.js';

const T0 = 1_700_000_000_000;
const params = (limit: number, windowMs = 1_000) => ({ limit, windowMs, burst: limit });

function live(s: SlidingWindowLogState): number[] {
  return s.times.slice(s.head, s.end);
}

describe('sliding_window_log', () => {
  it('counts a hit at t while t > now − W, exactly', () => {
    const d = new Driver(slidingWindowLog, params(3), new FakeClock(T0));
    for (const at of [0, 100, 200]) {
      d.clock.set(T0 + at);
      expect(d.hit().allowed).toBe(true);
    }
    d.clock.set(T0 + 300);
    expect(d.hit()).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 700 });
    d.clock.set(T0 + 999);
    expect(d.hit().allowed).toBe(false);
    d.clock.set(T0 + 1_000);
    expect(d.hit()).toEqual({ allowed: true, remainingIfCommitted: 0, remainingIfNotCommitted: 1, resetMs: 1_000 });
  });

  it('has no boundary burst: never more than L in any W span', () => {
    const d = new Driver(slidingWindowLog, params(10, 60_000), new FakeClock(T0 + 59_999));
    let admitted = 0;
    for (let i = 0; i < 15; i++) if (d.hit().allowed) admitted++;
    d.clock.advance(1);
    for (let i = 0; i < 15; i++) if (d.hit().allowed) admitted++;
    expect(admitted).toBe(10);
  });

  it('finds the entry whose expiry makes room for h hits', () => {
    const d = new Driver(slidingWindowLog, params(3), new FakeClock(T0));
    d.hit(2);
    d.clock.set(T0 + 500);
    d.hit(1);
    d.clock.set(T0 + 600);
    expect(d.hit(1).resetMs).toBe(400); // the 2 hits of t=0 must expire
    expect(d.hit(2).resetMs).toBe(400);
    expect(d.hit(3).resetMs).toBe(900); // both entries must expire
    expect(d.peek(0)).toMatchObject({ allowed: true, remainingIfNotCommitted: 0, resetMs: 900 });
  });

  it('rejects h > L for good (reset: until empty, or W) and L = 0 always', () => {
    const d = new Driver(slidingWindowLog, params(3), new FakeClock(T0));
    d.hit(1);
    d.clock.advance(100);
    expect(d.hit(4)).toMatchObject({ allowed: false, remainingIfNotCommitted: 2, resetMs: 900 });
    const zero = new Driver(slidingWindowLog, params(0), new FakeClock(T0));
    expect(zero.hit(1)).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 1_000 });
    expect(zero.hit(0)).toEqual({ allowed: true, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 0 });
  });

  it('keeps at most L live entries and bounded storage under steady load', () => {
    const d = new Driver(slidingWindowLog, params(5, 100), new FakeClock(T0), false);
    for (let i = 0; i < 10_000; i++) {
      d.clock.advance(7);
      d.hit();
      const s = d.state as SlidingWindowLogState;
      expect(s.end - s.head).toBeLessThanOrEqual(5);
      expect(s.times.length).toBeLessThanOrEqual(2 * 64 + 5);
    }
  });

  it('is pure: evaluating one state twice leaves both results intact', () => {
    const p = params(10);
    const s0 = slidingWindowLog.evaluate(undefined, T0, p, 1).next;
    const a = slidingWindowLog.evaluate(s0, T0 + 10, p, 2).next;
    const b = slidingWindowLog.evaluate(s0, T0 + 20, p, 3).next;
    expect(live(s0)).toEqual([T0]);
    expect(live(a)).toEqual([T0, T0 + 10]);
    expect(live(b)).toEqual([T0, T0 + 20]);
    expect(slidingWindowLog.evaluate(a, T0 + 30, p, 0).outcome.remainingIfNotCommitted).toBe(7);
    expect(slidingWindowLog.evaluate(b, T0 + 30, p, 0).outcome.remainingIfNotCommitted).toBe(6);
  });

  it('logs at the last entry time when the clock steps back (stays sorted, errs strict)', () => {
    const p = params(10);
    const s1 = slidingWindowLog.evaluate(undefined, T0 + 500, p, 1).next;
    const r = slidingWindowLog.evaluate(s1, T0 + 400, p, 1);
    expect(live(r.next)).toEqual([T0 + 500, T0 + 500]);
    expect(r.ttlMs).toBe(1_100);
  });
});
