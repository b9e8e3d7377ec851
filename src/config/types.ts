import type { AlgorithmName } from '../vocab/algorithm-names.js';
import type { LeaseSpec } from '../algorithms/lease-support.js';
import type { CapacityRuleSpec } from '../vocab/capacity-rule.js';
import type { DescriptorEntry, Unit } from '../vocab/types.js';
import type { CompiledAuthz } from './authz-types.js';
import type { CompiledOnLimit } from './on-limit-types.js';
import type { Shares, Throttling } from '../vocab/throttling.js';
import type { PredictCost } from '../vocab/predict-cost.js';
import type { CalendarSpec } from '../algorithms/calendar-window.js';

/**
 * The compiled, frozen rule set the decision engine reads. Produced by config/compile/compile.ts from the
 * parsed and validated YAML files; swapped whole on reload, never mutated.
 */

/** One limit of a rule (a rule has one, or several with `rate_limits: [...]`). */
export interface CompiledLimit {
  readonly name?: string;
  readonly requestsPerUnit: number;
  readonly windowMs: number;
  /** The unit reported on the wire: `unit` as written, or the largest unit dividing `window` (undefined → UNKNOWN). */
  readonly unit: Unit | undefined;
  readonly algorithm: AlgorithmName;
  /** token_bucket capacity (default requests_per_unit) / leaky_bucket tolerance (default 1). */
  readonly burst: number;
  /** envoyproxy/ratelimit's `soft_requests_per_unit` (0 = unset); reported at /rules, no effect on decisions. */
  readonly softRequestsPerUnit: number;
  /** What happens over this limit and what the client is told (`on_limit`); absent = reject, as always. */
  readonly onLimit?: CompiledOnLimit;
  /** `throttling:` (docs/throttling.md); absent = hard. Only on window algorithms. */
  readonly throttling?: Throttling;
  /** `ban:` in ms: a rejection bans the counter key this long; absent = no ban. */
  readonly banMs?: number;
  /** `shares:` per criticality class; absent = every class may fill the whole limit. */
  readonly shares?: Shares;
  /** `lease:`: with the Redis backend, replicas decide from leased units of this limit (src/lease/). */
  readonly lease?: LeaseSpec;
  /** `count_every_hit: true`: every hit is counted, even past the limit and on a rejected request (validate-count.ts). */
  readonly countEveryHit?: true;
  /** `capacity:`: the limit is this replica's granted share of a capacity resource, decided in process (core/capacity-store.ts). */
  readonly capacity?: CapacityRuleSpec;
  /** `predict_cost:`: admission charges the rule's predicted cost, settled later (src/cost/). */
  readonly predictCost?: PredictCost;
  /** `calendar:` / `time_zone:`: windows aligned to the calendar in a zone; windowMs is then the period's nominal length. */
  readonly calendar?: CalendarSpec;
  /** `max_values:`: a bound on the distinct counters (client values) this limit tracks per window. */
  readonly maxValues?: MaxValues;
}

/** `max_values: N` with `on_max_values`: past N values in a window, new ones share one overflow counter or are rejected. */
export interface MaxValues {
  readonly max: number;
  readonly onMax: 'overflow' | 'reject';
}

/** `valid_from` / `valid_until` of a descriptor or a file, epoch ms; outside [fromMs, untilMs) the rule does not exist. */
export interface Validity {
  readonly fromMs?: number;
  readonly untilMs?: number;
}

/** What a descriptor node with a `rate_limit` (or `rate_limits`) compiles to. */
export interface CompiledRule {
  /** Stats key as envoyproxy/ratelimit builds it: `domain.key_value.key2` (config path, values as written). */
  readonly statsKey: string;
  /** Where it was written, for /rules and logs: `file:line`. */
  readonly source: string;
  readonly unlimited: boolean;
  /** Empty iff unlimited. */
  readonly limits: readonly CompiledLimit[];
  /** Names of limits (of other descriptors of the same request) this rule's limit replaces. */
  readonly replaces: readonly string[];
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  /** `share_threshold`: every value matching this node's wildcard shares one counter. */
  readonly shareThreshold: boolean;
  /**
   * `metadata:` of the descriptor, as written (a frozen JSON object), for the engine to pass on (e.g. into the
   * response's dynamic metadata). Absent when the descriptor has none.
   */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** Result of looking up one request descriptor. */
export interface RuleMatch {
  readonly rule: CompiledRule;
  /**
   * The entries that identify the counter: the request's entries, except that an entry matched by a
   * wildcard node with `share_threshold` carries the wildcard pattern as its value (one shared counter).
   */
  readonly counterEntries: readonly DescriptorEntry[];
  /** Stats key for this request (with `detailed_metric`, the request's values are included). */
  readonly statsKey: string;
  /**
   * The rule's `metadata` as envoyproxy/ratelimit hands it on for this match (into the response's dynamic
   * metadata). Absent where the reference rebuilds the matched limit and so loses it: `detailed_metric` on a
   * node without children, or a `value_to_metric` path whose stats key differs from the rule's.
   */
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface CompiledDomain {
  readonly name: string;
  /** Files that contributed (several when MERGE_DOMAIN_CONFIG is on). */
  readonly files: readonly string[];
  /**
   * envoyproxy/ratelimit lookup semantics (exact beats wildcard beats key-only, level by level). At `nowMs`, a
   * descriptor outside its `valid_from`/`valid_until` is absent (undefined: every descriptor is present).
   */
  lookup(entries: readonly DescriptorEntry[], nowMs?: number): RuleMatch | undefined;
}

export interface CompiledConfig {
  readonly domains: ReadonlyMap<string, CompiledDomain>;
  /** Files loaded, in load order (relative names). */
  readonly files: readonly string[];
  /** Content hash of all files: changes iff the rule set changed. */
  readonly version: string;
  /** A JSON-able description of every domain and rule, served at GET /rules. */
  describe(): unknown;
  /** Per domain, the `authz:` block (how the ext_authz Check service builds descriptors); absent = none. */
  readonly authz?: ReadonlyMap<string, CompiledAuthz>;
}

/** One configuration error, with position. `toString()` gives `file:line:col: path: message`. */
export interface ConfigErrorInfo {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** Field path such as `descriptors[2].rate_limit.unit`; empty for file-level errors. */
  readonly path: string;
  readonly message: string;
}
