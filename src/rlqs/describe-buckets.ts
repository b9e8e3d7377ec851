/** The quota book as the admin port's GET /rlqs shows it: at most DESCRIBED_BUCKETS buckets listed (the totals cover all). */
import type { Tracked } from './book-types.js';

const DESCRIBED_BUCKETS = 1000;

export function describeBook(tracked: ReadonlyMap<string, Tracked>, streams: number): object {
  const listed: Tracked[] = [];
  for (const t of tracked.values()) {
    if (listed.length >= DESCRIBED_BUCKETS) break;
    listed.push(t);
  }
  const buckets = listed.map((t) => ({
    domain: t.domain,
    bucket: Object.fromEntries(t.entries.map((e) => [e.key, e.value])),
    rule: t.rule.name,
    limit: { requests: t.rule.perFill, per_seconds: t.rule.fillS },
    shadow: t.rule.shadow,
    holders: [...t.holders].map(([s, h]) => ({
      stream: s.id,
      share: Math.max(0, h.share),
      demand: h.demand === undefined ? null : Math.round(h.demand * 10) / 10,
    })),
    other_replicas: t.peers.map((p) => ({ share: p.share, demand: p.demand === undefined ? null : Math.round(p.demand * 10) / 10 })),
  }));
  return { streams, tracked: tracked.size, buckets };
}
