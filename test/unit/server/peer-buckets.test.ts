/** The rapid-reset buckets (server/grpc/guard/peer-buckets.ts): per connection, and per peer address (opt-in), on a fake clock. */
import { describe, expect, it } from 'vitest';
import { PeerBuckets, TokenBucket } from '../../../src/server/grpc/guard/peer-buckets.js';

describe('PeerBuckets', () => {
  it('spends a burst, refills at the rate, and refuses a dry peer until half the burst is back', () => {
    let now = 0;
    const b = new PeerBuckets({ burst: 10, ratePerS: 2, nowMs: () => now });
    for (let i = 0; i < 10; i++) expect(b.take('a')).toBe(true);
    expect(b.take('a')).toBe(false);
    expect(b.refused('a')).toBe(true);
    expect(b.refused('b')).toBe(false); // another peer is untouched
    expect(b.take('b')).toBe(true);
    now += 2000; // 4 tokens back: still below half of 10
    expect(b.refused('a')).toBe(true);
    now += 500; // 5 tokens: half
    expect(b.refused('a')).toBe(false);
    expect(b.take('a')).toBe(true);
  });

  it('keeps at most maxPeers buckets, forgetting the least recently seen', () => {
    const now = 0;
    const b = new PeerBuckets({ burst: 1, ratePerS: 1, nowMs: () => now, maxPeers: 2 });
    expect(b.take('a')).toBe(true);
    expect(b.take('a')).toBe(false); // a is dry
    expect(b.take('b')).toBe(true);
    expect(b.take('c')).toBe(true); // a, the least recent, is forgotten
    expect(b.refused('a')).toBe(false);
  });
});

describe('TokenBucket', () => {
  it('spends its burst, then refills at the rate and never above the burst', () => {
    let now = 0;
    const b = new TokenBucket(3, 2, () => now);
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([true, true, true, false]);
    now += 500; // one token back
    expect([b.take(), b.take()]).toEqual([true, false]);
    now += 60_000; // refilled to the burst, not beyond
    expect([b.take(), b.take(), b.take(), b.take()]).toEqual([true, true, true, false]);
  });
});
