/**
 * From a request's descriptors to store checks, the first half of a decision (rate-limiter.ts composes it):
 * each descriptor resolved to its rule or per-request override, `replaces` applied, and each remaining limit
 * turned into a LimitCheck with its key and the seams of the rooms beside the engine: throttling's ceilings,
 * bans and elastic fields (throttling/plan.ts), on_limit's store part (on-limit/checks.ts) and a lease.
 */
import type { CompiledDomain, CompiledLimit, CompiledRule } from '../config/types.js';
import type { AlgorithmName } from '../vocab/algorithm-names.js';
import type { LimitCheck, Refund, RefundAlgorithm } from '../storage/counter-store.js';
import type { Criticality } from '../vocab/throttling.js';
import { COUNTING_ALGORITHMS } from '../config/validate/validate-count.js';
import { hasThrottling, planCheck } from '../throttling/plan.js';
import { envoyCounterKey } from '../vocab/keys.js';
import { nativeCheckKey } from './windows/plan-key.js';
import type { ValueGuards } from './windows/value-guard.js';
import { storeOnLimit } from './on-limit/checks.js';
import { UNIT_SECONDS, type DescriptorEntry, type RequestDescriptor } from '../vocab/types.js';
import type { CostEstimator } from '../cost/estimator.js';
import { costRole, isPostResponse, splitSettlement, type CostRole } from '../cost/settlement.js';

export interface PlanContext {
  readonly keyPrefix: string;
  readonly domain: string;
  /** REDIS_KEY_FORMAT=envoy: plain one-unit fixed windows use envoyproxy/ratelimit's keys. */
  readonly envoyKeys: boolean;
  /** SHADOW_MODE. */
  readonly shadowMode: boolean;
  /** QUOTA_MODE. */
  readonly quotaMode?: boolean;
  readonly criticality: Criticality;
  readonly nowMs: number;
  /** By when a delayed answer (on_limit delay) must be due: the decision deadline less the delay margin. */
  readonly delayDeadlineMs?: number;
  readonly checkOnly: boolean;
  /** The `max_values` guards of this process; absent: no limit is bounded. */
  readonly valueGuards?: ValueGuards;
  /** Told of each value past a limit's `max_values` (the metric). */
  readonly onPastBound?: (domain: string, rule: string, action: 'overflow' | 'reject') => void;
}

export interface PlannedChecks {
  readonly checks: LimitCheck[];
  /** Units to give back before the checks are decided (descriptors with is_negative_hits). */
  readonly refunds: Refund[];
  /** checkLimits[i]: the configured limit behind checks[i] (whose `limit` a soft or share ceiling may change). */
  readonly checkLimits: CompiledLimit[];
  /** Some limit has an `on_limit`. */
  readonly hasOnLimit: boolean;
}

/** The checks of the resolved descriptors, in order; sets each descriptor's `firstCheck`. */
export function planChecks(resolved: readonly Resolved[], ctx: PlanContext): PlannedChecks {
  const checks: LimitCheck[] = [];
  const checkLimits: CompiledLimit[] = [];
  const refunds: Refund[] = [];
  let hasOnLimit = false;
  for (const r of resolved) {
    r.firstCheck = checks.length;
    const enforce = enforced(r, ctx.shadowMode, ctx.quotaMode);
    const shadow = r.rule !== undefined && (ctx.shadowMode || r.rule.shadowMode);
    for (const limit of r.limits) {
      const envoy = ctx.envoyKeys && isEnvoyCompatible(limit) && !hasThrottling(limit);
      const native = envoy ? undefined : nativeCheckKey(ctx, r, limit);
      const key = native?.key ?? envoyCounterKey(ctx.keyPrefix, ctx.domain, r.counterEntries, ctx.nowMs - (ctx.nowMs % limit.windowMs));
      if (limit.onLimit !== undefined) hasOnLimit = true;
      checkLimits.push(limit);
      checks.push(
        planCheck(
          {
            key,
            ...(envoy ? { keyFormat: 'envoy' as const } : {}),
            algorithm: limit.algorithm,
            limit: native?.rejected === true ? 0 : limit.requestsPerUnit,
            windowMs: native?.windowMs ?? limit.windowMs,
            ...(native?.windowStartMs !== undefined ? { windowStartMs: native.windowStartMs } : {}),
            burst: limit.burst,
            hits: r.hits,
            enforce,
            ...(isPostResponse(r.cost) ? { countOver: 'always' as const } : countOver(limit, shadow)),
            onLimit: storeOnLimit(limit, key, enforce, ctx.nowMs, ctx.delayDeadlineMs, ctx.checkOnly),
            ...(limit.lease !== undefined && !envoy ? { lease: limit.lease } : {}),
            ...(limit.capacity !== undefined ? { capacity: limit.capacity } : {}),
          },
          limit,
          { keyPrefix: ctx.keyPrefix, domain: ctx.domain, ruleStatsKey: r.rule?.statsKey, criticality: ctx.criticality },
        ),
      );
      const planned = checks[checks.length - 1]!;
      if (r.refundUnits !== undefined && r.refundUnits > 0 && !envoy && native?.rejected !== true && isRefundAlgorithm(limit.algorithm)) {
        // A calendar window's counter is keyed by the window's start: the units go back into it while it runs.
        const calendarStart = native?.windowStartMs;
        refunds.push({
          key,
          algorithm: limit.algorithm,
          limit: planned.limit,
          windowMs: native?.windowMs ?? limit.windowMs,
          units: r.refundUnits,
          windowStart: calendarStart ?? ctx.nowMs - (ctx.nowMs % limit.windowMs),
          ...(calendarStart !== undefined ? { calendar: true as const } : {}),
        });
      }
    }
  }
  return { checks, refunds, checkLimits, hasOnLimit };
}

/** sliding_window_log keeps the times of admitted hits, not a count: a refund has nothing to lower there. */
function isRefundAlgorithm(algorithm: AlgorithmName): algorithm is RefundAlgorithm {
  return algorithm !== 'sliding_window_log';
}

/**
 * When a limit's hits count past it (storage/counter-store.ts LimitCheck.countOver): every hit with
 * count_every_hit; a shadow-mode limit's hits whenever the request is admitted, as envoyproxy/ratelimit counts
 * them (only the algorithms whose count may run past the limit: a bucket or the exact log only counts what fits).
 */
function countOver(limit: CompiledLimit, shadow: boolean): { countOver?: 'admitted' | 'always' } {
  if (limit.countEveryHit === true) return { countOver: 'always' };
  return shadow && COUNTING_ALGORITHMS.includes(limit.algorithm) ? { countOver: 'admitted' } : {};
}

/** A resolved descriptor: the rule that applies (if any) and the entries that identify its counters. */
export interface Resolved {
  readonly rule: CompiledRule | undefined;
  /** The rule's limits, less those another matched rule `replaces`. */
  limits: readonly CompiledLimit[];
  readonly counterEntries: readonly DescriptorEntry[];
  readonly statsKey: string;
  readonly hits: number;
  /** Envoy's is_negative_hits: units to give back to each limit (hits is then 0). */
  readonly refundUnits?: number;
  /** Index of this descriptor's first check in the batch. */
  firstCheck: number;
  /** The rule's `metadata` for the response's dynamic metadata, when the match carries it (RuleMatch.metadata). */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** Admission by predicted cost: what the call is for a rule with `predict_cost` (src/cost/settlement.ts). */
  readonly cost?: CostRole;
}

/** A fixed_window limit of exactly one unit: the only kind envoyproxy/ratelimit has, so the only kind whose counter it shares. */
function isEnvoyCompatible(limit: CompiledLimit): boolean {
  return limit.algorithm === 'fixed_window' && limit.calendar === undefined && limit.unit !== undefined && limit.windowMs === UNIT_SECONDS[limit.unit] * 1000;
}

/**
 * Whether a descriptor's rejection rejects the request (shadow_mode, SHADOW_MODE and quota_mode only report;
 * a refund never rejects, as envoyproxy/ratelimit answers negative hits OK).
 */
export function enforced(r: Resolved, shadowAll = false, quotaAll = false): boolean {
  if (r.refundUnits !== undefined || isPostResponse(r.cost) || (quotaAll && inQuotaMode(r, true))) return false;
  return r.rule === undefined || (!shadowAll && !r.rule.shadowMode && !r.rule.quotaMode);
}

/**
 * Whether a descriptor is in quota mode: its rule says `quota_mode`, or QUOTA_MODE (`quotaAll`) puts every
 * descriptor but those of `unlimited` rules in it (request-level overrides and descriptors no rule matches
 * included, as envoyproxy/ratelimit counts them with that setting).
 */
export function inQuotaMode(r: Resolved, quotaAll = false): boolean {
  if (r.refundUnits !== undefined) return false;
  return quotaAll ? r.rule?.unlimited !== true : r.rule?.quotaMode === true;
}

/** The estimator of admission by predicted cost, read at the decision's time. */
export interface CostContext {
  readonly estimator: CostEstimator;
  readonly nowMs: number;
}

export function resolve(
  domainName: string,
  domain: CompiledDomain | undefined,
  d: RequestDescriptor,
  requestHits: number,
  nowMs: number,
  costs?: CostContext,
): Resolved {
  // A settlement's `predicted_cost` entry is not part of the descriptor its rule is looked up by.
  const split = costs === undefined ? undefined : splitSettlement(d.entries);
  const resolved = resolveLimits(
    domainName,
    domain,
    split === undefined ? d : { ...d, entries: split.entries },
    d.negativeHits === true ? 0 : (d.hitsAddend ?? requestHits),
    nowMs,
  );
  // A refund (Envoy's is_negative_hits): checked with 0 hits, its units given back (planChecks).
  if (d.negativeHits === true) return { ...resolved, refundUnits: d.hitsAddend ?? requestHits };
  if (costs === undefined) return resolved;
  const rule = resolved.rule;
  const spec = rule?.limits.length === 1 ? rule.limits[0]!.predictCost : undefined;
  const role = costRole(spec, split?.value, resolved.hits, () => costs.estimator.predict(rule!.statsKey, spec!, costs.nowMs));
  if (role === undefined) return resolved;
  return { ...resolved, hits: role.hits, ...(role.refund > 0 ? { refundUnits: role.refund } : {}), cost: role.role };
}

function resolveLimits(domainName: string, domain: CompiledDomain | undefined, d: RequestDescriptor, hits: number, nowMs: number): Resolved {
  // A request-level override replaces the configured limit when the domain is known (as envoyproxy/ratelimit
  // does); an override whose unit Envoy sent as UNKNOWN is ignored.
  if (domain !== undefined && d.limit !== undefined && d.limit.unit !== undefined) {
    const windowMs = UNIT_SECONDS[d.limit.unit] * 1000;
    const limit: CompiledLimit = {
      requestsPerUnit: d.limit.requestsPerUnit,
      windowMs,
      unit: d.limit.unit,
      algorithm: 'fixed_window',
      burst: d.limit.requestsPerUnit,
      softRequestsPerUnit: 0,
    };
    return { rule: undefined, limits: [limit], counterEntries: d.entries, statsKey: overrideStatsKey(domainName, d.entries), hits, firstCheck: 0 };
  }
  const match = domain?.lookup(d.entries, nowMs);
  if (match === undefined) return { rule: undefined, limits: [], counterEntries: d.entries, statsKey: '', hits, firstCheck: 0 };
  return {
    rule: match.rule,
    limits: match.rule.limits,
    counterEntries: match.counterEntries,
    statsKey: match.statsKey,
    hits,
    firstCheck: 0,
    ...(match.metadata !== undefined ? { metadata: match.metadata } : {}),
  };
}

/** Limits named in any matched rule's `replaces` are dropped from every descriptor of the request. */
export function applyReplaces(resolved: Resolved[]): void {
  const replaced = new Set<string>();
  for (const r of resolved) for (const name of r.rule?.replaces ?? []) replaced.add(name);
  if (replaced.size === 0) return;
  for (const r of resolved) {
    r.limits = r.limits.filter((l) => l.name === undefined || !replaced.has(l.name));
  }
}

function overrideStatsKey(domain: string, entries: readonly DescriptorEntry[]): string {
  return `${domain}.${entries.map((e) => (e.value === '' ? e.key : `${e.key}_${e.value}`)).join('.')}`;
}

export function policyName(r: Resolved, limit: CompiledLimit): string {
  if (limit.name !== undefined) return limit.name;
  const base = r.statsKey;
  return r.limits.length > 1 ? `${base}/${limit.algorithm}/${limit.windowMs / 1000}s` : base;
}
