import { describe, expect, it } from 'vitest';
import { tokenBucket } from '../../../src/algorithms/token-bucket.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { Driver } from './support.js';

const T0 = 1_700_000_000_000;
const DAY = 86_400_000;

/** Hits of 1 at the current instant until one is rejected; the number admitted. */
function drain(d: Driver<unknown>): number {
  let n = 0;
  while (d.hit(1).allowed) n++;
  return n;
}

describe('token_bucket', () => {
  it('starts full, then refills continuously at L per W', () => {
    const d = new Driver(tokenBucket, { limit: 10, windowMs: 1_000, burst: 10 }, new FakeClock(T0));
    expect(d.peek(0)).toEqual({ allowed: true, remainingIfCommitted: 10, remainingIfNotCommitted: 10, resetMs: 0 });
    expect(drain(d)).toBe(10);
    expect(d.peek(1)).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 100 });
    d.clock.advance(350);
    expect(d.peek(0).remainingIfNotCommitted).toBe(3); // 3.5 tokens
    expect(d.hit(3)).toEqual({ allowed: true, remainingIfCommitted: 0, remainingIfNotCommitted: 3, resetMs: 950 });
    expect(d.peek(1).resetMs).toBe(50); // the half token needs 50 ms more
    d.clock.advance(49);
    expect(d.hit(1).allowed).toBe(false);
    d.clock.advance(1);
    expect(d.hit(1).allowed).toBe(true);
  });

  it('admits exactly 100000 + burst in one second at 100000 per second', () => {
    const d = new Driver(tokenBucket, { limit: 100_000, windowMs: 1_000, burst: 5_000 }, new FakeClock(T0));
    let admitted = drain(d);
    for (let ms = 1; ms <= 1_000; ms++) {
      d.clock.advance(1);
      admitted += drain(d);
    }
    expect(admitted).toBe(105_000);
  });

  it('handles 1 per day exactly', () => {
    const d = new Driver(tokenBucket, { limit: 1, windowMs: DAY, burst: 1 }, new FakeClock(T0));
    expect(d.hit().allowed).toBe(true);
    expect(d.hit()).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: DAY });
    d.clock.advance(DAY - 1);
    expect(d.hit().allowed).toBe(false);
    d.clock.advance(1);
    expect(d.hit().allowed).toBe(true);
  });

  it('keeps fractional refill exact over many periods (3 per second: T = 333.3 ms)', () => {
    const d = new Driver(tokenBucket, { limit: 3, windowMs: 1_000, burst: 3 }, new FakeClock(T0));
    expect(d.hit(3).allowed).toBe(true);
    expect(d.peek(1).resetMs).toBe(334);
    // 3000 s later, with the bucket drained every 1000 ms: exactly 3 tokens come back each time.
    for (let i = 0; i < 3_000; i++) {
      d.clock.advance(1_000);
      expect(d.hit(3).allowed).toBe(true);
      expect(d.hit(1).allowed).toBe(false);
    }
  });

  it('lets burst differ from L', () => {
    const d = new Driver(tokenBucket, { limit: 10, windowMs: 1_000, burst: 25 }, new FakeClock(T0));
    expect(drain(d)).toBe(25);
    d.clock.advance(2_500);
    expect(d.peek(0)).toMatchObject({ remainingIfNotCommitted: 25, resetMs: 0 });
  });

  it('rejects h > burst for good (reset: until full, or W) and everything at L = 0', () => {
    const d = new Driver(tokenBucket, { limit: 10, windowMs: 1_000, burst: 10 }, new FakeClock(T0));
    expect(d.hit(11)).toEqual({ allowed: false, remainingIfCommitted: 10, remainingIfNotCommitted: 10, resetMs: 1_000 });
    d.hit(4);
    expect(d.hit(11).resetMs).toBe(400);
    const zero = new Driver(tokenBucket, { limit: 0, windowMs: 1_000, burst: 5 }, new FakeClock(T0));
    expect(zero.hit(1)).toEqual({ allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: 1_000 });
    expect(zero.hit(0).allowed).toBe(true);
  });

  it('rounds a TAT counted in another L up to the next ms when the limit changes', () => {
    const p3 = { limit: 3, windowMs: 1_000, burst: 3 };
    const s = tokenBucket.evaluate(undefined, T0, p3, 1).next; // TAT = T0 + 333.33
    expect(s).toEqual({ tatMs: T0 + 333, tatFrac: 1, den: 3 });
    const o = tokenBucket.evaluate(s, T0, { limit: 10, windowMs: 1_000, burst: 10 }, 0).outcome;
    expect(o.resetMs).toBe(334);
    expect(o.remainingIfNotCommitted).toBe(6); // 334 ms short of full = 3.34 tokens used
  });

  it('stays exact at the bounds (L = 2^32 − 1 per year)', () => {
    const year = 31_536_000_000;
    const p = { limit: 4_294_967_295, windowMs: year, burst: 4_294_967_295 };
    const r = tokenBucket.evaluate(undefined, T0, p, 1_000_000_000);
    expect(r.outcome.remainingIfCommitted).toBe(3_294_967_295);
    const later = tokenBucket.evaluate(r.next, T0 + 1_000_000, p, 0).outcome;
    // refilled: floor(1e6 × L / year) tokens
    const refill = Number((1_000_000n * 4_294_967_295n) / BigInt(year));
    expect(later.remainingIfNotCommitted).toBe(3_294_967_295 + refill);
  });
});
