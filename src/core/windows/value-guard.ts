/**
 * The `max_values` guard of a limit: the distinct counters (client values) the limit has tracked in its current
 * window, held by this process. The first N values of a window count on their own counters; past N a new value
 * is 'overflow' (counted in the limit's one overflow counter) or 'reject', as the rule says. The set is emptied
 * when the window changes. A new rule set keeps the set of a limit it did not change (same domain, rule, window,
 * algorithm and bound), so a reload mid-window grants no N fresh values; a changed limit starts afresh. Memory: at
 * most N values per limit with a bound, each the counter's tag (at most 512 characters plus an escape margin,
 * vocab/keys.ts); a guard the new rules do not take up is dropped once its window has ended.
 *
 * Per process: replicas do not share the sets, so with R replicas the store holds at most R × N counters of the
 * limit per window plus one overflow counter; a value one replica tracks may fall into another's overflow.
 */
import type { CompiledConfig, CompiledLimit } from '../../config/types.js';
import { limitWindow } from './limit-windows.js';

export type ValueVerdict = 'own' | 'overflow' | 'reject';

/** What `/top` and the status page may show of one guard. */
export interface ValueGuardState {
  readonly domain: string;
  readonly rule: string;
  readonly maxValues: number;
  readonly onMaxValues: 'overflow' | 'reject';
  /** Distinct values tracked in the current window. */
  readonly tracked: number;
  /** Requests past the bound in the current window (sent to the overflow counter, or rejected). */
  readonly pastBound: number;
  readonly windowStartMs: number;
}

class Guard {
  windowStartMs = Number.NaN;
  readonly values = new Set<string>();
  pastBound = 0;
  constructor(
    readonly domain: string,
    readonly rule: string,
    public limit: CompiledLimit,
  ) {}

  /** What makes two limits of two rule sets the same for their counters: the same keys, windows and bound. */
  get identity(): string {
    return guardIdentity(this.domain, this.rule, this.limit);
  }

  endedBy(nowMs: number): boolean {
    return Number.isNaN(this.windowStartMs) || this.windowStartMs + limitWindow(this.limit, this.windowStartMs).lengthMs <= nowMs;
  }
}

function guardIdentity(domain: string, rule: string, l: CompiledLimit): string {
  const calendar = l.calendar === undefined ? '' : `${l.calendar.period}@${l.calendar.timeZone}`;
  return JSON.stringify([domain, rule, l.name ?? '', l.algorithm, l.windowMs, calendar, l.maxValues!.max, l.maxValues!.onMax]);
}

export class ValueGuards {
  private guards = new Map<CompiledLimit, Guard>();
  /** Guards of earlier rule sets not yet taken up by a limit of this one, by identity. */
  private carried = new Map<string, Guard>();
  private config: CompiledConfig | undefined;
  private lastNowMs = Number.NEGATIVE_INFINITY;

  /** Told of every request's rule set: a new set's limits (new objects) take up the guards of unchanged ones. */
  use(config: CompiledConfig): void {
    if (config === this.config) return;
    this.config = config;
    const carried = new Map<string, Guard>();
    for (const g of [...this.carried.values(), ...this.guards.values()]) if (!g.endedBy(this.lastNowMs)) carried.set(g.identity, g);
    this.carried = carried;
    this.guards = new Map();
  }

  /**
   * Whether the counter `tag` of `limit` counts on its own in the window starting at `windowStartMs`. With
   * `record` false (a refund, which counts nothing) the answer is read without taking a slot or counting a value
   * past the bound.
   */
  admit(domain: string, rule: string, limit: CompiledLimit, tag: string, windowStartMs: number, record = true): ValueVerdict {
    const bound = limit.maxValues!;
    // The latest window start seen: an instant known to have passed, to drop carried guards whose window ended.
    if (windowStartMs > this.lastNowMs) this.lastNowMs = windowStartMs;
    let guard = this.guards.get(limit);
    if (guard === undefined) {
      const key = guardIdentity(domain, rule, limit);
      guard = this.carried.get(key) ?? new Guard(domain, rule, limit);
      this.carried.delete(key);
      guard.limit = limit;
      this.guards.set(limit, guard);
    }
    if (guard.windowStartMs !== windowStartMs) {
      guard.windowStartMs = windowStartMs;
      guard.values.clear();
      guard.pastBound = 0;
    }
    if (guard.values.has(tag)) return 'own';
    if (guard.values.size < bound.max) {
      if (record) guard.values.add(tag);
      return 'own';
    }
    if (!record) return bound.onMax;
    guard.pastBound++;
    return bound.onMax;
  }

  /** Every guard in use, for the admin port (bounded by the rules with `max_values`). */
  states(): ValueGuardState[] {
    return [...this.guards.values()].map((g) => ({
      domain: g.domain,
      rule: g.rule,
      maxValues: g.limit.maxValues!.max,
      onMaxValues: g.limit.maxValues!.onMax,
      tracked: g.values.size,
      pastBound: g.pastBound,
      windowStartMs: g.windowStartMs,
    }));
  }
}
