/**
 * Who is being limited: per rule, the descriptor values most often rejected and most often near the limit
 * over the last few minutes, in fixed memory. Each rule keeps a ring of `slices` time slices (`sliceMs` each,
 * aligned on the injected clock); each slice holds two Space-Saving sketches (rejected, near the limit) of
 * 2 × `keysPerRule` items. A slice older than the ring is reused, so counts fade out minute by minute without
 * a timer. At most `maxRules` rules are tracked; a new one evicts the rule least recently limited (a scan of
 * `maxRules`, only when a new rule arrives with the table full).
 *
 * Only descriptors that were rejected or near their limit reach `record`: an admitted request below the
 * limit costs one branch. Values are kept as `values` says: as sent, as a SHA-256 prefix, or not at all.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../vocab/clock.js';
import type { DescriptorEntry } from '../vocab/types.js';
import { SpaceSaving, type CountedItem } from './space-saving.js';

export type TopValues = 'plain' | 'hash' | 'hide';

export interface TopKeysOptions {
  readonly clock: Clock;
  /** Keys reported per rule and kind; the sketches hold twice as many. */
  readonly keysPerRule: number;
  /** Rules tracked at once. */
  readonly maxRules: number;
  readonly values: TopValues;
  readonly sliceMs?: number;
  readonly slices?: number;
}

/** What the engine tells about one limited descriptor (core/observer.ts DescriptorReport, the fields used here). */
export interface LimitedDescriptor {
  readonly domain: string;
  readonly rule?: { readonly statsKey: string; readonly source: string } | undefined;
  readonly entries?: readonly DescriptorEntry[] | undefined;
  readonly overLimit: boolean;
  readonly nearLimit: boolean;
  readonly shadowMode: boolean;
}

export interface TopKey {
  readonly entries: readonly DescriptorEntry[];
  /** Descriptors counted over the window (an upper bound: the true count is at least count − error). */
  readonly count: number;
  readonly error: number;
}

export interface TopRule {
  readonly domain: string;
  /** The deciding rule's stats key (its place in the config, values as written). */
  readonly rule: string;
  /** Where the rule is written: `file:line`, or the xDS resource. */
  readonly source: string;
  readonly rejected: readonly TopKey[];
  readonly near_limit: readonly TopKey[];
  /** Rejections of a shadow_mode rule are counted with the others and flagged here. */
  readonly shadow_mode: boolean;
}

export interface TopSnapshot {
  readonly window_seconds: number;
  readonly values: TopValues;
  readonly rules_tracked: number;
  readonly max_rules: number;
  /** Rules dropped to make room for another since start. */
  readonly rules_evicted: number;
  readonly rules: readonly TopRule[];
  /** Limits with `max_values`: the distinct values tracked in the current window and how many came past the bound. */
  readonly max_values?: readonly BoundedLimit[];
}

/** One limit with `max_values`, in /top's JSON. */
export interface BoundedLimit {
  readonly domain: string;
  readonly rule: string;
  readonly max_values: number;
  readonly on_max_values: 'overflow' | 'reject';
  readonly tracked: number;
  readonly past_bound: number;
  readonly window_start: string;
}

interface Slice {
  index: number;
  readonly rejected: SpaceSaving<readonly DescriptorEntry[]>;
  readonly near: SpaceSaving<readonly DescriptorEntry[]>;
}

interface RuleState {
  readonly domain: string;
  readonly rule: string;
  readonly source: string;
  readonly ring: Slice[];
  shadow: boolean;
  /** When it was last limited (clock ms): the least recent is evicted first. */
  lastMs: number;
}

export class TopKeys {
  private readonly rules = new Map<string, Map<string, RuleState>>();
  private tracked = 0;
  private readonly sliceMs: number;
  private readonly slices: number;
  private evicted = 0;

  constructor(private readonly o: TopKeysOptions) {
    this.sliceMs = o.sliceMs ?? 60_000;
    this.slices = o.slices ?? 5;
  }

  record(d: LimitedDescriptor): void {
    if (d.rule === undefined || d.entries === undefined || (!d.overLimit && !d.nearLimit)) return;
    const nowMs = this.o.clock.nowMs();
    // By domain, then by the rule's stats key (a string the compiled rule holds): no key is built per record.
    let domain = this.rules.get(d.domain);
    let state = domain?.get(d.rule.statsKey);
    if (state === undefined) {
      if (this.tracked >= this.o.maxRules) this.evictLeastRecent();
      if (domain === undefined) this.rules.set(d.domain, (domain = new Map<string, RuleState>()));
      state = { domain: d.domain, rule: d.rule.statsKey, source: d.rule.source, ring: [], shadow: false, lastMs: nowMs };
      domain.set(d.rule.statsKey, state);
      this.tracked++;
    }
    state.lastMs = nowMs;
    if (d.overLimit && d.shadowMode) state.shadow = true;
    const slice = this.slice(state, nowMs);
    // The request's entries are kept as they are (immutable) when shown plain: nothing is copied per record.
    const entries = this.o.values === 'plain' ? d.entries : this.shown(d.entries);
    // Within one rule the entry keys follow the rule's path: the values alone tell the counters apart.
    let key = entries[0]?.value ?? '';
    for (let i = 1; i < entries.length; i++) key += `\0${entries[i]!.value}`;
    (d.overLimit ? slice.rejected : slice.near).add(key, 1, entries);
  }

  /** The top keys per rule over the window, heaviest rules first; only `domain`'s when given. */
  snapshot(domain?: string): TopSnapshot {
    const current = Math.floor(this.o.clock.nowMs() / this.sliceMs);
    const rules: TopRule[] = [];
    for (const s of this.states()) {
      if (domain !== undefined && s.domain !== domain) continue;
      const live = s.ring.filter((slice) => slice.index > current - this.slices && slice.index <= current);
      const rejected = this.merge(live.map((l) => l.rejected));
      const near = this.merge(live.map((l) => l.near));
      if (rejected.length === 0 && near.length === 0) continue;
      rules.push({ domain: s.domain, rule: s.rule, source: s.source, rejected, near_limit: near, shadow_mode: s.shadow });
    }
    const weight = (r: TopRule) => r.rejected.reduce((n, k) => n + k.count, 0);
    rules.sort((a, b) => weight(b) - weight(a) || a.domain.localeCompare(b.domain) || a.rule.localeCompare(b.rule));
    return {
      window_seconds: (this.sliceMs * this.slices) / 1000,
      values: this.o.values,
      rules_tracked: this.tracked,
      max_rules: this.o.maxRules,
      rules_evicted: this.evicted,
      rules,
    };
  }

  private *states(): Generator<RuleState> {
    for (const byKey of this.rules.values()) yield* byKey.values();
  }

  private evictLeastRecent(): void {
    let oldest: RuleState | undefined;
    for (const s of this.states()) if (oldest === undefined || s.lastMs < oldest.lastMs) oldest = s;
    const byKey = this.rules.get(oldest!.domain)!;
    byKey.delete(oldest!.rule);
    if (byKey.size === 0) this.rules.delete(oldest!.domain);
    this.tracked--;
    this.evicted++;
  }

  private slice(state: RuleState, nowMs: number): Slice {
    const index = Math.floor(nowMs / this.sliceMs);
    const at = index % this.slices;
    let slice = state.ring[at];
    if (slice === undefined || slice.index !== index) {
      const size = 2 * this.o.keysPerRule;
      slice = state.ring[at] = { index, rejected: new SpaceSaving(size), near: new SpaceSaving(size) };
    }
    return slice;
  }

  private merge(sketches: readonly SpaceSaving<readonly DescriptorEntry[]>[]): TopKey[] {
    const sum = new Map<string, CountedItem<readonly DescriptorEntry[]>>();
    for (const sketch of sketches) {
      for (const item of sketch.values()) {
        const seen = sum.get(item.id);
        if (seen === undefined) sum.set(item.id, { ...item });
        else {
          seen.count += item.count;
          seen.error += item.error;
        }
      }
    }
    return [...sum.values()]
      .sort((a, b) => b.count - a.count || (a.id < b.id ? -1 : 1))
      .slice(0, this.o.keysPerRule)
      .map((i) => ({ entries: i.payload.map((e) => ({ key: e.key, value: e.value })), count: i.count, error: i.error }));
  }

  private shown(entries: readonly DescriptorEntry[]): readonly DescriptorEntry[] {
    if (this.o.values === 'plain') return entries.map((e) => ({ key: e.key, value: e.value }));
    if (this.o.values === 'hide') return entries.map((e) => ({ key: e.key, value: '***' }));
    return entries.map((e) => ({ key: e.key, value: `sha256:${createHash('sha256').update(e.value).digest('hex').slice(0, 16)}` }));
  }
}
