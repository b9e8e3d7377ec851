/**
 * The `max_values` guard of a limit: the distinct counters (client values) the limit has tracked in its current
 * window, held by this process. The first N values of a window count on their own counters; past N a new value
 * is 'overflow' (counted in the limit's one overflow counter) or 'reject', as the rule says. The set is emptied
 * when the window changes, and the guards when the rule set is replaced. Memory: at most N values per limit with
 * a bound, each the counter's tag (at most 512 characters plus an escape margin, vocab/keys.ts).
 *
 * Per process: replicas do not share the sets, so with R replicas the store holds at most R × N counters of the
 * limit per window plus one overflow counter; a value one replica tracks may fall into another's overflow.
 */
import type { CompiledConfig, CompiledLimit } from '../../config/types.js';

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
    readonly limit: CompiledLimit,
  ) {}
}

export class ValueGuards {
  private guards = new Map<CompiledLimit, Guard>();
  private config: CompiledConfig | undefined;

  /** Told of every request's rule set: a new set starts every guard afresh (its limits are new objects). */
  use(config: CompiledConfig): void {
    if (config === this.config) return;
    this.config = config;
    this.guards = new Map();
  }

  /** Whether the counter `tag` of `limit` counts on its own in the window starting at `windowStartMs`. */
  admit(domain: string, rule: string, limit: CompiledLimit, tag: string, windowStartMs: number): ValueVerdict {
    const bound = limit.maxValues!;
    let guard = this.guards.get(limit);
    if (guard === undefined) this.guards.set(limit, (guard = new Guard(domain, rule, limit)));
    if (guard.windowStartMs !== windowStartMs) {
      guard.windowStartMs = windowStartMs;
      guard.values.clear();
      guard.pastBound = 0;
    }
    if (guard.values.has(tag)) return 'own';
    if (guard.values.size < bound.max) {
      guard.values.add(tag);
      return 'own';
    }
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
