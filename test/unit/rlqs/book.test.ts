/**
 * The quota book on an injected clock: demand measured between reports on its own clock (time_elapsed is
 * ignored), shares following demand, stable shares under steady load, idle buckets abandoned, the bucket bounds
 * folding new buckets, and a changed limit re-split at once.
 */
import { describe, expect, it } from 'vitest';
import { QuotaBook, type BucketRule, type Subscriber } from '../../../src/rlqs/book.js';
import type { Assignment, BucketAction } from '../../../src/rlqs/rlqs-codec.js';

const ALL = [{ key: 'name', value: 'all' }];

function setUp(rule: (entries: readonly { key: string; value: string }[]) => BucketRule, bounds: { maxBuckets?: number; maxBucketsPerStream?: number } = {}) {
  let now = 1_000_000;
  const folded: string[] = [];
  const book = new QuotaBook({
    nowMs: () => now,
    ttlS: 30,
    idleAbandonMs: 120_000,
    maxBuckets: bounds.maxBuckets ?? 100,
    maxBucketsPerStream: bounds.maxBucketsPerStream ?? 100,
    rule: (_d, entries) => rule(entries),
    observer: { report: () => undefined, assignments: () => undefined, reported: () => undefined, wouldDeny: () => undefined, folded: (d) => folded.push(d) },
  });
  const pushed = new Map<string, BucketAction[][]>();
  const open = (id: string): Subscriber => book.open(id, (actions) => pushed.set(id, [...(pushed.get(id) ?? []), actions]));
  const report = (s: Subscriber, allowed: number, denied = 0, entries = ALL): Assignment =>
    book.report(s, { domain: 'd', usages: [{ entries, allowed, denied, elapsedS: 0 }] })[0]!.assignment;
  return { book, open, report, pushed, folded, advance: (ms: number) => (now += ms) };
}

const limit20: BucketRule = { kind: 'limit', name: 'd.name_all', perFill: 20, fillS: 1, shadow: false };
const tokens = (a: Assignment | undefined) => (a?.kind === 'token_bucket' ? a.tokensPerFill : a?.kind);

describe('QuotaBook', () => {
  it('follows demand measured on its own clock: 30/s and 4/s under 20/s become 15 and 5', () => {
    const t = setUp(() => limit20);
    const a = t.open('a');
    const b = t.open('b');
    expect(tokens(t.report(a, 1))).toBe(20);
    expect(tokens(t.report(b, 1))).toBe(10);
    expect(t.pushed.get('a')!.map((p) => tokens(p[0]!.assignment))).toEqual([10]);
    // 5 s later (time_elapsed says 0): a saw 30/s, b 4/s.
    t.advance(5000);
    expect(tokens(t.report(a, 100, 50))).toBe(10); // b not measured yet: a's share stays
    expect(tokens(t.report(b, 20))).toBe(5);
    expect(t.pushed.get('a')!.map((p) => tokens(p[0]!.assignment))).toEqual([10, 15]);
    // The same loads again: no change is worth a fresh bucket.
    t.advance(5000);
    t.report(a, 75, 75);
    t.report(b, 20);
    expect(t.pushed.get('a')).toHaveLength(2);
    expect(t.pushed.get('b')).toBeUndefined();
  });

  it('abandons a bucket on an Envoy that reported it idle for 120 s, freeing its share', () => {
    const t = setUp(() => limit20);
    const a = t.open('a');
    const b = t.open('b');
    t.report(a, 1);
    t.report(b, 1);
    for (let i = 0; i < 24; i++) {
      t.advance(5000);
      t.report(b, 50);
      expect(t.report(a, 0).kind).toBe(i < 23 ? 'token_bucket' : 'abandon');
    }
    t.advance(5000);
    expect(tokens(t.report(b, 50))).toBe(20);
  });

  it('folds buckets past the per-stream bound: answered with an even split of the limit, not tracked', () => {
    const t = setUp(() => ({ kind: 'limit', name: 'x', perFill: 20, fillS: 1, shadow: false }), { maxBucketsPerStream: 2 });
    const a = t.open('a');
    const b = t.open('b');
    t.report(b, 1, 0, [{ key: 'id', value: 'b' }]);
    for (let i = 0; i < 5; i++) t.report(a, 1, 0, [{ key: 'id', value: String(i) }]);
    expect(t.folded).toHaveLength(3);
    expect(tokens(t.report(a, 1, 0, [{ key: 'id', value: '9' }]))).toBe(10);
    expect((t.book.describe() as { buckets: unknown[] }).buckets).toHaveLength(3);
  });

  it("re-splits at once when the rules change a bucket's limit, and drops it when no rule matches any more", () => {
    let rule: BucketRule = limit20;
    const t = setUp(() => rule);
    const a = t.open('a');
    const b = t.open('b');
    t.report(a, 1);
    t.report(b, 1);
    rule = { ...limit20, perFill: 8 };
    expect(tokens(t.report(a, 1))).toBe(4);
    expect(tokens(t.pushed.get('b')!.at(-1)![0]!.assignment)).toBe(4);
    rule = { kind: 'allow' };
    expect(t.report(a, 1).kind).toBe('allow_all');
    expect(t.book.stats().get('d')).toEqual({ buckets: 1, streams: 2 });
  });
});
