/** The validated, not yet indexed, form of one rules file (output of validate.ts, input of compile.ts). */
import type { AlgorithmName } from '../vocab/algorithm-names.js';
import type { LeaseSpec } from '../algorithms/lease-support.js';
import type { CapacityRuleSpec } from '../vocab/capacity-rule.js';
import type { Unit } from '../vocab/types.js';
import type { RawAuthz } from './authz-types.js';
import type { Shares, Throttling } from '../vocab/throttling.js';
import type { JsonValue } from './validate/yaml-nodes.js';
import type { CompiledOnLimit } from './on-limit-types.js';
import type { PredictCost } from '../vocab/predict-cost.js';
import type { CalendarSpec } from '../algorithms/calendar-window.js';
import type { MaxValues, Validity } from './types.js';

export interface Position {
  readonly line: number;
  readonly column: number;
}

export interface RawLimit {
  readonly name?: string;
  readonly requestsPerUnit: number;
  readonly windowMs: number;
  readonly unit: Unit | undefined;
  /** `window` as written (undefined when the limit used `unit`). */
  readonly window?: string;
  readonly algorithm: AlgorithmName;
  readonly burst: number;
  /** envoyproxy/ratelimit's `soft_requests_per_unit` (0 = unset): accepted, validated and reported. */
  readonly softRequestsPerUnit: number;
  /** `on_limit:` (on-limit.ts), already in its compiled, frozen form; absent = reject as always. */
  readonly onLimit?: CompiledOnLimit;
  /** Absent = hard. */
  readonly throttling?: Throttling;
  readonly banMs?: number;
  readonly shares?: Shares;
  /** `lease:` (quota leases, validate-lease.ts); absent = none. */
  readonly lease?: LeaseSpec;
  /** `count_every_hit: true` (validate-count.ts); absent = false. */
  readonly countEveryHit?: true;
  /** `capacity:` (the limit is a granted share, validate-capacity-rule.ts); absent = none. */
  readonly capacity?: CapacityRuleSpec;
  /** `predict_cost:` (admission by predicted cost, validate-predict.ts); absent = none. */
  readonly predictCost?: PredictCost;
  /** `calendar:` / `time_zone:` (validate-calendar.ts); absent = epoch-aligned windows. */
  readonly calendar?: CalendarSpec;
  /** `max_values:` (validate-max-values.ts); absent = unbounded. */
  readonly maxValues?: MaxValues;
}

export interface RawRule {
  readonly unlimited: boolean;
  readonly limits: readonly RawLimit[];
  readonly replaces: readonly string[];
}

export interface RawDescriptor {
  readonly key: string;
  /** '' when the descriptor has no value (key-only). */
  readonly value: string;
  readonly position: Position;
  /** Field path, e.g. `descriptors[0].descriptors[2]`. */
  readonly path: string;
  /** Undefined when the descriptor has no rate limit (or its rate limit had errors). */
  readonly rule?: RawRule;
  readonly shadowMode: boolean;
  readonly quotaMode: boolean;
  readonly detailedMetric: boolean;
  readonly valueToMetric: boolean;
  readonly shareThreshold: boolean;
  /** `metadata:` as written (a mapping), undefined when absent. */
  readonly metadata?: { readonly [key: string]: JsonValue };
  /** `valid_from` / `valid_until` (validate-validity.ts); absent = always. */
  readonly validity?: Validity;
  readonly descriptors: readonly RawDescriptor[];
}

export interface RawFile {
  readonly name: string;
  /** Undefined when missing or invalid (already reported). */
  readonly domain?: string;
  readonly domainPosition: Position;
  readonly descriptors: readonly RawDescriptor[];
  /** The `authz:` block (ext_authz descriptors from the HTTP request), when present and valid. */
  readonly authz?: RawAuthz;
  /** The file's top-level `valid_from` / `valid_until`: every descriptor of the file is bounded by it. */
  readonly validity?: Validity;
}
