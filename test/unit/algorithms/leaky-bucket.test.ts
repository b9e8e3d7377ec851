import { describe, expect, it } from 'vitest';
import { leakyBucket } from '../../../src/algorithms/leaky-bucket.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { Driver } from './support.js';

const T0 = 1_700_000_000_000;

/** Offers one request every ms for `ms` ms; returns the offsets (from start) of those admitted. */
function admitTimes(d: Driver<unknown>, ms: number): number[] {
  const start = d.clock.nowMs();
  const out: number[] = [];
  for (let i = 0; i < ms; i++) {
    if (d.hit(1).allowed) out.push(d.clock.nowMs() - start);
    d.clock.advance(1);
  }
  return out;
}

describe('leaky_bucket (GCRA)', () => {
  it('with burst 1 admits one request per emission interval T = W/L', () => {
    const d = new Driver(leakyBucket, { limit: 10, windowMs: 1_000, burst: 1 }, new FakeClock(T0));
    expect(admitTimes(d, 450)).toEqual([0, 100, 200, 300, 400]);
  });

  it('spaces fractional intervals exactly (T = 333.3 ms, admitted at the first whole ms)', () => {
    const d = new Driver(leakyBucket, { limit: 3, windowMs: 1_000, burst: 1 }, new FakeClock(T0));
    expect(d.hit(1).allowed).toBe(true);
    expect(d.peek(1).resetMs).toBe(334);
    d.clock.advance(333);
    expect(d.hit(1).allowed).toBe(false);
    d.clock.advance(1);
    expect(d.hit(1).allowed).toBe(true);
    // a caller trying every ms is admitted at the first whole ms at or after each TAT
    d.clock.set(T0 + 10_000);
    expect(admitTimes(d, 1_100)).toEqual([0, 334, 668, 1_002]);
  });

  it('does not drift: a steady caller at exactly L per W (gaps 333, 333, 334) always passes with burst 2', () => {
    const d = new Driver(leakyBucket, { limit: 3, windowMs: 1_000, burst: 2 }, new FakeClock(T0));
    const gaps = [333, 333, 334];
    for (let i = 0; i < 30_000; i++) {
      expect(d.hit(1).allowed).toBe(true);
      d.clock.advance(gaps[i % 3]!);
    }
    // here (a whole second) the deficit is exactly T: one extra request fits in the tolerance, a second does not
    expect(d.clock.nowMs() - T0).toBe(10_000_000);
    expect(d.hit(1).allowed).toBe(true);
    expect(d.hit(1).allowed).toBe(true);
    expect(d.hit(1).allowed).toBe(false);
  });

  it('lets `burst` requests through back to back, then one per T', () => {
    const d = new Driver(leakyBucket, { limit: 10, windowMs: 1_000, burst: 3 }, new FakeClock(T0));
    expect([1, 2, 3, 4].map(() => d.hit(1).allowed)).toEqual([true, true, true, false]);
    expect(d.peek(1).resetMs).toBe(100);
    d.clock.advance(1);
    expect(admitTimes(d, 400)).toEqual([99, 199, 299, 399]);
  });

  it('reports remaining, reset when allowed, h = 0 and h > burst', () => {
    const d = new Driver(leakyBucket, { limit: 10, windowMs: 1_000, burst: 3 }, new FakeClock(T0));
    expect(d.hit(1)).toEqual({ allowed: true, remainingIfCommitted: 2, remainingIfNotCommitted: 3, resetMs: 100 });
    expect(d.hit(0)).toEqual({ allowed: true, remainingIfCommitted: 2, remainingIfNotCommitted: 2, resetMs: 100 });
    expect(d.hit(4)).toEqual({ allowed: false, remainingIfCommitted: 2, remainingIfNotCommitted: 2, resetMs: 100 });
  });
});
