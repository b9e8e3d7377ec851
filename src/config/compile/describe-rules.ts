/**
 * The JSON served at GET /rules (under `domains`, next to the version and files): every domain and rule as loaded, with snake_case field names matching the
 * YAML, so an operator can compare what they wrote with what the service understood. Built once per compiled
 * config and deep-frozen (the same object is returned on every call).
 */
import { formatWindow } from '../duration.js';
import { describeOnLimit } from '../on-limit-types.js';
import type { RawDescriptor } from '../raw.js';
import { describeThrottling, type DescribedThrottling } from './describe-throttling.js';
import type { CompiledRule, Validity } from '../types.js';
import { runAtOnce, type Steps } from '../slices.js';

export interface DescribedLimit {
  readonly name?: string;
  readonly requests_per_unit: number;
  /** The unit reported to Envoy; null when the window is not a whole number of any unit (UNKNOWN on the wire). */
  readonly unit: string | null;
  readonly window: string;
  readonly window_ms: number;
  readonly algorithm: string;
  /** Only for token_bucket and leaky_bucket. */
  readonly burst?: number;
  /** Quota leases: units claimed at a time and how long they are kept (ms). */
  readonly lease?: { readonly size: number; readonly ttl_ms: number };
  readonly count_every_hit?: true;
  /** A calendar limit: its period and zone (the window is the calendar's, `window` its nominal length). */
  readonly calendar?: string;
  readonly time_zone?: string;
  /** A bound on the distinct values counted per window, and what happens past it. */
  readonly max_values?: number;
  readonly on_max_values?: string;
  /** A capacity limit: the resource its share comes from and how it asks (docs/capacity-client.md). */
  readonly capacity?: {
    readonly resource: string;
    readonly fallback: string;
    readonly wants: string | number;
    readonly min_wants: number;
    readonly headroom: string;
  };
  /** Only when set. */
  readonly soft_requests_per_unit?: number;
  /** Only when set (on-limit-types.ts describeOnLimit). */
  readonly on_limit?: Readonly<Record<string, unknown>>;
}

/** A limit as /rules shows it: with `throttling`, `ban` and `shares` when set. */
export type DescribedLimitWithThrottling = DescribedLimit & DescribedThrottling;

export interface DescribedRule {
  readonly stats_key: string;
  readonly source: string;
  /** The config path as key/value pairs (value omitted for key-only descriptors). */
  readonly descriptor: readonly { readonly key: string; readonly value?: string }[];
  readonly unlimited: boolean;
  readonly limits: readonly DescribedLimitWithThrottling[];
  readonly replaces: readonly string[];
  readonly shadow_mode: boolean;
  readonly quota_mode: boolean;
  readonly detailed_metric: boolean;
  readonly value_to_metric: boolean;
  readonly share_threshold: boolean;
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** When the rule exists (its file's and its descriptors' `valid_from`/`valid_until`), as RFC 3339 UTC; only when set. */
  readonly valid_from?: string;
  readonly valid_until?: string;
}

export interface DescribedDomain {
  readonly name: string;
  readonly files: readonly string[];
  readonly rules: readonly DescribedRule[];
}

/** What describe() returns: the domains, in load order (version and files are on CompiledConfig itself). */
export type ConfigDescription = readonly DescribedDomain[];

/** What a domain's description is made of: its name, files and rules in config order. */
export interface DescribedInput {
  readonly name: string;
  readonly files: readonly string[];
  readonly rules: readonly { rule: CompiledRule; raw: RawDescriptor; chain: readonly RawDescriptor[]; validity?: Validity }[];
}

export function describeConfig(domains: readonly DescribedInput[]): ConfigDescription {
  return runAtOnce(describeSteps(domains));
}

/** describeConfig a rule at a time (slices.ts). */
export function* describeSteps(domains: readonly DescribedInput[]): Steps<ConfigDescription> {
  const out: DescribedDomain[] = [];
  for (const d of domains) {
    const rules: DescribedRule[] = [];
    for (const { rule, raw, chain, validity } of d.rules) {
      rules.push(deepFreeze({ ...describeRule(rule, raw, chain), ...describeValidity(validity) }));
      yield;
    }
    out.push(Object.freeze({ name: d.name, files: Object.freeze([...d.files]), rules: Object.freeze(rules) }));
  }
  return Object.freeze(out);
}

function describeValidity(v: Validity | undefined): { valid_from?: string; valid_until?: string } {
  return {
    ...(v?.fromMs !== undefined ? { valid_from: new Date(v.fromMs).toISOString() } : {}),
    ...(v?.untilMs !== undefined ? { valid_until: new Date(v.untilMs).toISOString() } : {}),
  };
}

function describeRule(rule: CompiledRule, raw: RawDescriptor, chain: readonly RawDescriptor[]): DescribedRule {
  return {
    stats_key: rule.statsKey,
    source: rule.source,
    descriptor: chain.map((d) => (d.value === '' ? { key: d.key } : { key: d.key, value: d.value })),
    unlimited: rule.unlimited,
    limits: rule.limits.map((l) => ({
      ...(l.name !== undefined ? { name: l.name } : {}),
      requests_per_unit: l.requestsPerUnit,
      unit: l.unit ?? null,
      window: formatWindow(l.windowMs),
      window_ms: l.windowMs,
      algorithm: l.algorithm,
      ...(l.algorithm === 'token_bucket' || l.algorithm === 'leaky_bucket' ? { burst: l.burst } : {}),
      ...(l.softRequestsPerUnit > 0 ? { soft_requests_per_unit: l.softRequestsPerUnit } : {}),
      ...(l.onLimit !== undefined ? { on_limit: describeOnLimit(l.onLimit) } : {}),
      ...describeThrottling(l),
      ...(l.lease !== undefined ? { lease: { size: l.lease.size, ttl_ms: l.lease.ttlMs } } : {}),
      ...(l.countEveryHit === true ? { count_every_hit: true as const } : {}),
      ...(l.predictCost !== undefined
        ? { predict_cost: { initial: l.predictCost.initial, window: formatWindow(l.predictCost.windowMs), clip: l.predictCost.clip } }
        : {}),
      ...(l.calendar !== undefined ? { calendar: l.calendar.period, time_zone: l.calendar.timeZone } : {}),
      ...(l.maxValues !== undefined ? { max_values: l.maxValues.max, on_max_values: l.maxValues.onMax } : {}),
      ...(l.capacity !== undefined
        ? {
            capacity: {
              resource: l.capacity.resource,
              fallback: l.capacity.fallback,
              wants: l.capacity.wants,
              min_wants: l.capacity.minWants,
              headroom: `${l.capacity.headroomPercent}%`,
            },
          }
        : {}),
    })),
    replaces: [...rule.replaces],
    shadow_mode: rule.shadowMode,
    quota_mode: rule.quotaMode,
    detailed_metric: rule.detailedMetric,
    value_to_metric: raw.valueToMetric,
    share_threshold: rule.shareThreshold,
    ...(rule.metadata !== undefined ? { metadata: rule.metadata } : {}),
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}
