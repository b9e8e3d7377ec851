/**
 * The quota book: every bucket the Envoys report, which Envoy (stream) holds which share of its global
 * limit, and what each was last told. In process; state dies with the process, and Envoys rebuild it within
 * one report interval of reconnecting.
 *
 * A report is answered at once with an assignment for every bucket in it (re-sending an unchanged token
 * bucket keeps Envoy's bucket as it is and renews its TTL). When shares change, the other Envoys holding
 * the bucket are pushed their new share in the same turn, so a joining Envoy makes the others shrink at once.
 * Demand is measured on our own clock between reports (Envoy's time_elapsed is whole seconds, 0 for a new
 * bucket). A holder silent for SILENT_MS is released, so a stream that reports once holds nothing for long.
 *
 * With an exchange (shared.ts, BACKEND=redis), the Envoys of the other replicas count too: the limit is split
 * over all of them by demand, and this replica's Envoys are given at most what the others do not hold now
 * (an Envoy joining on another replica gets what is free at once; the others shrink at their next report, or
 * sooner when its replica signals the bucket: sync.ts).
 */
import type { BucketAction, BucketUsage, UsageReports, Assignment } from './rlqs-codec.js';
import { capShares, fairShares, worthChanging } from './shares.js';
import { clientOf, graceStream, RECONNECT_GRACE_MS, type OwnHolder, type PeerHolder } from './shared.js';
import { describeBook } from './describe-buckets.js';
import { bucketKey, Holder, Subscriber, type BookOptions, type BucketRule, type Tracked } from './book-types.js';

export { Subscriber, type BookOptions, type BucketRule, type RlqsObserver } from './book-types.js';

/** Rounds (sync.ts ticks) a bucket held back by other replicas is read again, and them asked to shrink. */
const WANT_ROUNDS = 5;

/** A holder not reported for this long is released: three of Envoy's 5 s reports missed. */
export const SILENT_MS = 15_000;
/** How often the tracked buckets are swept for silent holders (on a report, by the book's clock). */
const SWEEP_MS = 1000;

export class QuotaBook {
  private readonly tracked = new Map<string, Tracked>();
  private readonly subscribers = new Set<Subscriber>();
  /** Buckets whose Envoys here get less than their fair part (the others hold it): rounds of re-reading left. */
  private readonly wanting = new Map<string, number>();
  private sweptAtMs = Number.NEGATIVE_INFINITY;
  /** The domain's streams that reported lately, as last counted (for folded buckets). */
  private reporting = { atMs: Number.NaN, domain: '', streams: 0 };

  constructor(private readonly o: BookOptions) {}

  open(id: string, push: (actions: BucketAction[]) => void): Subscriber {
    const s = new Subscriber(id, push);
    this.subscribers.add(s);
    return s;
  }

  /** The stream ended: its shares are released (the others grow on their next report). */
  close(s: Subscriber): void {
    this.subscribers.delete(s);
    // The other replicas go on counting a measured demand's shares for a while (shared.ts RECONNECT_GRACE_MS):
    // its Envoy enforces them until assigned again after it reconnects. One entry per address and bucket (the
    // last stream's), so streams opened and closed again and again hold one share at most; a stream never
    // measured stops counting now.
    const grace: OwnHolder[] = [];
    for (const t of s.buckets.values()) {
      const h = t.holders.get(s);
      if (h?.demand !== undefined && h.share > 0) grace.push({ bucket: t.key, stream: graceStream(s.id), share: h.share, demand: h.demand });
      this.release(t, s);
    }
    if (grace.length > 0) this.o.exchange?.write(grace, RECONNECT_GRACE_MS);
    s.buckets.clear();
  }

  /**
   * One reports message from `s`: the answer, at once without an exchange; with one, once the other replicas'
   * holders of its buckets were read (or could not be: then from the last view), and this replica's written.
   */
  answer(s: Subscriber, reports: UsageReports): BucketAction[] | Promise<BucketAction[]> {
    const exchange = this.o.exchange;
    if (exchange === undefined) return this.report(s, reports);
    const domain = s.domain === '' ? reports.domain : s.domain;
    const keys = new Set<string>();
    for (const u of reports.usages) {
      if (u.oversize === true) continue;
      const rule = this.o.rule(domain, u.entries);
      if (rule.kind === 'limit' && !rule.shadow) keys.add(bucketKey(domain, u.entries));
    }
    if (keys.size === 0) return this.report(s, reports);
    const read = exchange.read([...keys]).catch(() => undefined);
    return read.then((peers) => {
      if (!this.subscribers.has(s)) return []; // the stream ended meanwhile
      const answer = this.report(s, reports, peers);
      exchange.write(this.ownHolders(keys));
      return answer;
    });
  }

  /** This replica's holders of these buckets, as the exchange stores them. */
  ownHolders(keys: Iterable<string>): OwnHolder[] {
    const own: OwnHolder[] = [];
    for (const key of keys) {
      for (const [sub, h] of this.tracked.get(key)?.holders ?? [])
        if (h.share >= 0) own.push({ bucket: key, stream: sub.id, share: h.share, demand: h.demand });
    }
    return own;
  }

  /**
   * The buckets to look at again (sync.ts): those held back by other replicas (for WANT_ROUNDS rounds after it
   * started), and those of `signalled` tracked here.
   */
  unsettled(signalled: Iterable<string>): string[] {
    this.sweep(this.o.nowMs()); // quiet holders are neither resplit nor written again
    const keys = new Set<string>();
    for (const [key, left] of this.wanting) {
      if (left <= 1 || !this.tracked.has(key)) this.wanting.delete(key);
      else this.wanting.set(key, left - 1);
      if (this.tracked.has(key)) keys.add(key);
    }
    for (const key of signalled) if (this.tracked.has(key)) keys.add(key);
    return [...keys];
  }

  /** The other replicas' holders of a bucket read again: new shares pushed to the Envoys here that they move. */
  rebalance(peers: Map<string, PeerHolder[]>): void {
    const pushes = new Map<Subscriber, BucketAction[]>();
    for (const [key, list] of peers) {
      const t = this.tracked.get(key);
      if (t === undefined || t.rule.shadow) continue;
      t.peers = list;
      this.reshare(t, false, pushes);
    }
    for (const [sub, actions] of pushes) {
      for (const a of actions) this.o.observer?.assignments(sub.domain, a.assignment.kind, 1);
      sub.push(actions);
    }
  }

  /** One reports message from `s`: the answer for every bucket in it (pushes to other streams go out here). */
  report(s: Subscriber, reports: UsageReports, peers?: Map<string, PeerHolder[]>): BucketAction[] {
    if (s.domain === '') s.domain = reports.domain;
    const domain = s.domain;
    this.o.observer?.report(domain);
    const now = this.o.nowMs();
    s.reportedAtMs = now;
    this.sweep(now);
    const pushes = new Map<Subscriber, BucketAction[]>();
    const answer: BucketAction[] = [];
    for (const u of reports.usages) {
      this.o.observer?.reported(domain, u.allowed, u.denied);
      const assignment = this.assign(s, domain, u, now, pushes, peers);
      answer.push({ entries: u.entries, assignment });
      this.o.observer?.assignments(domain, assignment.kind, 1);
    }
    for (const [other, actions] of pushes) {
      if (other === s) continue;
      for (const a of actions) this.o.observer?.assignments(other.domain, a.assignment.kind, 1);
      other.push(actions);
    }
    return answer;
  }

  private assign(
    s: Subscriber,
    domain: string,
    u: BucketUsage,
    now: number,
    pushes: Map<Subscriber, BucketAction[]>,
    peers: Map<string, PeerHolder[]> | undefined,
  ): Assignment {
    const ttlS = this.o.ttlS;
    const rule = this.o.rule(domain, u.entries);
    const key = bucketKey(domain, u.entries);
    let t = s.buckets.get(key);
    if (rule.kind !== 'limit') {
      if (t !== undefined) this.release(t, s); // the rules changed under a tracked bucket
      return { kind: rule.kind === 'allow' ? 'allow_all' : 'deny_all', ttlS };
    }
    if (u.oversize === true) {
      this.o.observer?.folded(domain, 'bucket_id_size');
      return this.folded(rule, domain, now);
    }
    if (t === undefined) {
      t = this.tracked.get(key);
      if ((t === undefined && this.tracked.size >= this.o.maxBuckets) || s.buckets.size >= this.o.maxBucketsPerStream) {
        this.o.observer?.folded(domain, 'bucket_limit');
        return this.folded(rule, domain, now);
      }
      t ??= this.create(key, domain, u.entries, rule, now);
    }
    const limitChanged = t.rule.perFill !== rule.perFill || t.rule.fillS !== rule.fillS;
    t.peers = peers?.get(key) ?? t.peers;
    t.rule = rule;
    let h = t.holders.get(s);
    const joined = h === undefined;
    if (h === undefined) {
      h = new Holder(now); // the first report's counts cover an unknown time: not a measure
      t.holders.set(s, h);
      s.buckets.set(key, t);
    } else this.measure(h, u, now, rule.fillS);
    h.reportedAtMs = now;
    if (rule.shadow) this.shadowCount(t, u.allowed, now);
    if (u.allowed + u.denied > 0) h.activeAtMs = now;
    else if (!joined && now - h.activeAtMs >= this.o.idleAbandonMs) {
      this.release(t, s);
      return { kind: 'abandon' };
    }
    if (rule.shadow) return { kind: 'allow_all', ttlS };
    this.reshare(t, joined || limitChanged, pushes);
    return this.tokenBucket(rule, h.share);
  }

  private create(key: string, domain: string, entries: BucketUsage['entries'], rule: Extract<BucketRule, { kind: 'limit' }>, now: number): Tracked {
    const t: Tracked = { key, domain, entries, rule, holders: new Map(), shadowTokens: rule.perFill, shadowAtMs: now, peers: [] };
    this.tracked.set(key, t);
    return t;
  }

  private measure(h: Holder, u: BucketUsage, now: number, fillS: number): void {
    h.count += u.allowed + u.denied;
    const dt = now - h.sinceMs;
    if (dt < 1000) return; // too short to measure: the counts wait for the next report
    // The last interval's rate alone (Envoy's reports are 5 s apart, which smooths enough): a load that
    // changes is followed at the next report, not over several.
    h.demand = (h.count * fillS * 1000) / dt;
    h.count = 0;
    h.sinceMs = now;
  }

  /** New shares for every holder of `t` when they changed enough (or `force`); others told at once. */
  private reshare(t: Tracked, force: boolean, pushes: Map<Subscriber, BucketAction[]>): void {
    const holders = [...t.holders];
    const current = holders.map(([, h]) => h.share);
    // Split over every holder, this replica's first; this replica's get at most what the others hold not.
    const clients = [...holders.map(([sub]) => clientOf(sub.id)), ...t.peers.map((p) => p.client)];
    const all = fairShares(t.rule.perFill, [...holders.map(([, h]) => h.demand), ...t.peers.map((p) => p.demand)], clients);
    const held = t.peers.reduce((n, p) => n + p.share, 0);
    const wanted = all.slice(0, holders.length);
    const next = capShares(wanted, Math.floor(t.rule.perFill) - held);
    const short = wanted.reduce((a, b) => a + b, 0) - next.reduce((a, b) => a + b, 0);
    // Held back by the other replicas' Envoys: ask them to shrink now (sync.ts), not at their next report.
    if (short > Math.max(1, 0.1 * t.rule.perFill)) {
      if (!this.wanting.has(t.key)) this.wanting.set(t.key, WANT_ROUNDS);
      this.o.exchange?.signal(t.key);
    }
    if (!force && !current.includes(-1) && !worthChanging(current, next)) return;
    holders.forEach(([sub, h], i) => {
      if (h.share === next[i]) return;
      const first = h.share < 0;
      h.share = next[i]!;
      if (first) return; // its own answer carries it
      let list = pushes.get(sub);
      if (list === undefined) pushes.set(sub, (list = []));
      list.push({ entries: t.entries, assignment: this.tokenBucket(t.rule, h.share) });
    });
  }

  private tokenBucket(rule: Extract<BucketRule, { kind: 'limit' }>, share: number): Assignment {
    if (share <= 0) return { kind: 'deny_all', ttlS: this.o.ttlS };
    return { kind: 'token_bucket', ttlS: this.o.ttlS, maxTokens: share, tokensPerFill: share, fillIntervalS: rule.fillS };
  }

  /**
   * An untracked bucket: an even split of its limit among the domain's streams that reported lately, not
   * following demand, and never below one token (a stream that reports once and stays quiet does not count).
   */
  private folded(rule: Extract<BucketRule, { kind: 'limit' }>, domain: string, now: number): Assignment {
    if (rule.shadow) return { kind: 'allow_all', ttlS: this.o.ttlS };
    const m = this.reporting;
    if (m.atMs !== now || m.domain !== domain) {
      // Counted once per report (a report may fold thousands of buckets).
      const silentMs = this.o.silentMs ?? SILENT_MS;
      let streams = 0;
      for (const s of this.subscribers) if (s.domain === domain && s.reportedAtMs !== undefined && now - s.reportedAtMs < silentMs) streams++;
      this.reporting = { atMs: now, domain, streams };
    }
    return this.tokenBucket(rule, Math.max(1, Math.floor(rule.perFill / Math.max(1, this.reporting.streams))));
  }

  /** Releases every holder whose bucket was not reported for `silentMs` (at most once every SWEEP_MS). */
  private sweep(now: number): void {
    if (now - this.sweptAtMs < SWEEP_MS) return;
    this.sweptAtMs = now;
    const silentMs = this.o.silentMs ?? SILENT_MS;
    for (const t of [...this.tracked.values()]) {
      for (const [sub, h] of [...t.holders]) if (now - h.reportedAtMs >= silentMs) this.release(t, sub);
    }
  }

  /** Shadow mode: what a shared bucket of the whole limit would have refused of what was admitted. */
  private shadowCount(t: Tracked, allowed: number, now: number): void {
    const { perFill, fillS } = t.rule;
    t.shadowTokens = Math.min(perFill, t.shadowTokens + ((now - t.shadowAtMs) * perFill) / (fillS * 1000));
    t.shadowAtMs = now;
    t.shadowTokens -= allowed;
    if (t.shadowTokens < 0) {
      this.o.observer?.wouldDeny(t.domain, Math.round(-t.shadowTokens));
      t.shadowTokens = 0;
    }
  }

  private release(t: Tracked, s: Subscriber, forget = true): void {
    if (t.holders.delete(s) && forget) this.o.exchange?.remove(t.key, s.id);
    s.buckets.delete(t.key);
    if (t.holders.size === 0) this.tracked.delete(t.key);
  }

  /** Tracked buckets and open streams per domain (for the metrics). */
  stats(): Map<string, { buckets: number; streams: number }> {
    const out = new Map<string, { buckets: number; streams: number }>();
    const of = (d: string) => out.get(d) ?? out.set(d, { buckets: 0, streams: 0 }).get(d)!;
    for (const t of this.tracked.values()) of(t.domain).buckets++;
    for (const s of this.subscribers) if (s.domain !== '') of(s.domain).streams++;
    return out;
  }

  /** The current assignments, for the admin port's GET /rlqs. */
  describe(): object {
    return describeBook(this.tracked, this.subscribers.size);
  }
}
