/** One lease's bookkeeping: expiry by ttl and window end, a spent lease, and the token bucket's decay bound. */
import { describe, expect, it } from 'vitest';
import { Lease, type LeaseTerms } from '../../../src/lease/lease.js';

const T0 = 1_700_000_040_000; // a window start for 60 s windows
const fixed: LeaseTerms = { algorithm: 'fixed_window', limit: 100, windowMs: 60_000, burst: 100, spec: { size: 10, ttlMs: 1000 } };
const bucket: LeaseTerms = { algorithm: 'token_bucket', limit: 100, windowMs: 1000, burst: 100, spec: { size: 10, ttlMs: 1000 } };

describe('Lease', () => {
  it('ends at the ttl, and no later than its window (window algorithms)', () => {
    expect(new Lease('k', fixed, T0, 10, 10, 100, 60_000).expiresAt).toBe(T0 + 1000);
    const late = new Lease('k', fixed, T0 + 59_500, 10, 10, 100, 500);
    expect(late.expiresAt).toBe(T0 + 60_000);
    expect(late.windowOver(T0 + 60_000)).toBe(true);
  });

  it('with nothing granted, answers "no quota" until the claim reset, then asks again', () => {
    const empty = new Lease('k', fixed, T0 + 10_000, 10, 0, 0, 50_000, 50_000);
    expect(empty.spent(1)).toBe(true);
    expect(empty.take(1, T0 + 10_000)).toBe(false);
    expect(empty.retryAfter(T0 + 10_000)).toBe(50_000);
    expect(empty.expiresAt).toBe(T0 + 10_100); // asks again after 100 ms: another replica may have given units back
  });

  it('a claim that got nothing for a big request is not spent for a request that fits what the limit had', () => {
    // 40 left before the claim, a request of 60 asked: nothing granted; a request of 30 still fits.
    const short = new Lease('k', fixed, T0, 60, 0, 40, 60_000, 60_000);
    expect(short.spent(60)).toBe(true);
    expect(short.spent(30)).toBe(false);
    // Granted what was left (8 of 10): once 5 are used, a request of 4 is spent, one of 3 is taken.
    const partial = new Lease('k', fixed, T0, 10, 8, 8, 60_000);
    expect(partial.take(5, T0)).toBe(true);
    expect(partial.spent(4)).toBe(true);
    expect(partial.spent(3)).toBe(false);
  });

  it('takes, puts back and reports the shared remaining at the claim less local use', () => {
    const lease = new Lease('k', fixed, T0, 10, 10, 80, 60_000);
    expect(lease.take(4, T0)).toBe(true);
    expect(lease.remaining()).toBe(76);
    lease.putBack(1);
    expect(lease.remaining()).toBe(77);
    expect(lease.take(8, T0)).toBe(false);
    expect(lease.take(7, T0)).toBe(true);
    expect(lease.usable(T0)).toBe(0);
  });

  it('token_bucket: keeps every token while the bucket is still refilling', () => {
    // 0 tokens left before the claim: the bucket is not full again before 100 tokens of refill (1 s).
    // Nothing granted: one token (the request's) is back in 10 ms, a whole claim of 10 in 100 ms.
    expect(new Lease('k', bucket, T0, 10, 0, 0, 10, 100).expiresAt).toBe(T0 + 10);
    // Some granted: ask again when a whole claim would be granted.
    expect(new Lease('k', bucket, T0, 10, 4, 4, 1000, 60).expiresAt).toBe(T0 + 60);
    expect(new Lease('k', bucket, T0, 10, 4, 4, 1000, 600).expiresAt).toBe(T0 + 100); // spent: asks again after 100 ms
    const full = new Lease('k', bucket, T0, 10, 10, 10, 1000);
    expect(full.usable(T0 + 800)).toBe(10); // 10 left before: ≥ 89 short of full, so no decay until 890 ms
  });

  it('token_bucket: loses a leased token per token the full bucket would have refilled (no burst above capacity)', () => {
    // The bucket was full (100) at the claim: any refill after it would overflow, so the lease shrinks at once.
    const lease = new Lease('k', bucket, T0, 10, 10, 100, 100);
    expect(lease.usable(T0)).toBe(10);
    expect(lease.usable(T0 + 1)).toBe(9); // 0.1 token of refill, rounded against the lease
    expect(lease.usable(T0 + 50)).toBe(5);
    expect(lease.take(5, T0 + 50)).toBe(true);
    expect(lease.usable(T0 + 50)).toBe(0);
    expect(lease.usable(T0 + 100)).toBe(0);
  });
});
