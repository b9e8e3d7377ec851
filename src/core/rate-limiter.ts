/**
 * The decision engine: one decision per RateLimitRequest.
 *
 * 1. Resolve every descriptor to a rule (or a per-request override), drop limits named in any
 *    matched rule's `replaces`, and turn the remaining limits into store checks (resolve.ts, with the seams of
 *    throttling, on_limit and leases).
 * 2. Ask the store once, atomically: the request is admitted iff every enforced limit allows it, and a
 *    rejected request consumes no quota from any limit. (One exception, as in envoyproxy/ratelimit: a
 *    request is also rejected when every one of its quota_mode descriptors is over; ordinary limits that
 *    admitted it have then counted it, since the store cannot know that rule.)
 * 3. Build one status per descriptor, in order, plus the response headers.
 *
 * Protocol-free: the servers translate wire messages to RateLimitRequest and back.
 */
import type { CompiledConfig } from '../config/types.js';
import type { CounterStore, LimitCheck, LimitOutcome } from '../storage/counter-store.js';
import type { Clock } from '../vocab/clock.js';
import { InvalidRequestError } from '../vocab/errors.js';
import { previewOutcomes, readOnlyChecks } from './check-only.js';
import { buildResponseHeaders, type HeaderOptions, type AppliedLimit } from './headers.js';
import { withBackoff } from './on-limit/checks.js';
import { AtLimit, checkOwners } from './on-limit/respond.js';
import { clockTimer, type Timer } from '../vocab/timer.js';
import { noopObserver, type DecisionObserver } from './observer.js';
import { checkRequest, DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../vocab/request-limits.js';
import { classify, DEFAULT_CRITICALITY_KEY } from '../throttling/criticality.js';
import { hasThrottling, reportedRemaining } from '../throttling/plan.js';
import { applyReplaces, enforced, inQuotaMode, planChecks, policyName, resolve, type Resolved } from './resolve.js';
import { throttlingSignals, type CheckReport } from '../throttling/report.js';
import { responseMetadata } from './response-metadata.js';
import { CostEstimator } from '../cost/estimator.js';
import { hasCost, reportCosts, withPrediction } from './cost-report.js';
import { traceStore, type DecisionTrace } from './decision-trace.js';
import type { DescriptorStatus, RateLimitDecision, RateLimitRequest } from '../vocab/types.js';
import { ValueGuards, type ValueGuardState } from './windows/value-guard.js';

export const MAX_UINT32 = 4_294_967_295;

export interface RateLimiterOptions {
  readonly store: CounterStore;
  readonly clock: Clock;
  /** The current rule set; read once per request, so a reload never splits a decision. */
  readonly config: () => CompiledConfig;
  readonly keyPrefix: string;
  /** 'envoy': fixed_window limits with a unit use envoyproxy/ratelimit's keys and counters (REDIS_KEY_FORMAT). */
  readonly keyFormat?: 'native' | 'envoy';
  readonly headers: HeaderOptions;
  readonly nearLimitRatio: number;
  readonly observer?: DecisionObserver;
  /** Bounds on one request (default DEFAULT_REQUEST_LIMITS); checked before any per-descriptor work. */
  readonly requestLimits?: RequestLimits;
  /** SHADOW_MODE: every configured limit reports but never rejects (request-level overrides still do). */
  readonly shadowMode?: boolean;
  /** QUOTA_MODE: every descriptor in quota mode (resolve.ts inQuotaMode), as with `quota_mode` on every rule. */
  readonly quotaMode?: boolean;
  /** Waits for a delayed request's reserved slot (on_limit delay); default: timeouts on `clock`. */
  readonly timer?: Timer;
  /** CRITICALITY_KEY: descriptor entries with this key give the request's class (src/throttling/criticality.ts). */
  readonly criticalityKey?: string;
  /** RESPONSE_DYNAMIC_METADATA: every response carries the request as dynamic_metadata (response-metadata.ts). */
  readonly responseDynamicMetadata?: boolean;
  /**
   * How long before the decision deadline a delayed answer (on_limit delay) must be due, ms, read per request
   * (server/grpc/deadline-margin.ts delayMs: the worst lateness lately measured); default 0. A delay that would end
   * later is not granted: the request is rejected at once.
   */
  readonly delayMarginMs?: () => number;
  /** The estimator of admission by predicted cost (`predict_cost`); default: one of this limiter's own. */
  readonly costs?: CostEstimator;
}

export interface DecideOptions {
  /** Absolute epoch-ms by which the store must have answered. */
  readonly deadlineMs?: number;
  /** Answer what the call would get without counting anything (see check-only.ts); not reported to the observer. */
  readonly checkOnly?: boolean;
  /**
   * The call: its `signal` aborts when the caller cancels or the deadline passes. Read only when a request
   * waits for a delayed slot (on_limit delay), which then ends at once and gives the slot back.
   */
  readonly call?: { readonly signal: AbortSignal };
  /** The call's trace span (tracing on and the call sampled or not); absent when tracing is off. */
  readonly trace?: DecisionTrace;
}

export class RateLimiter {
  private readonly observer: DecisionObserver;
  private readonly atLimit: AtLimit;
  readonly costs: CostEstimator;
  private readonly valueGuards = new ValueGuards();

  constructor(private readonly options: RateLimiterOptions) {
    this.observer = options.observer ?? noopObserver;
    this.costs = options.costs ?? new CostEstimator();
    const { store, clock } = options;
    this.atLimit = new AtLimit(options.timer ?? clockTimer(clock), (refunds) => store.refund?.(refunds, clock.nowMs()) ?? Promise.resolve());
  }

  /** Decides one request. Rejects with InvalidRequestError for bad input, StoreError when the store fails. */
  async decide(original: RateLimitRequest, decideOptions: DecideOptions = {}): Promise<RateLimitDecision> {
    const started = performance.now();
    validate(original);
    const bounded = checkRequest(original, this.options.requestLimits ?? DEFAULT_REQUEST_LIMITS, (field) =>
      this.observer.onOversized?.(original.domain, field),
    );
    const { request, criticality } = classify(bounded, this.options.criticalityKey ?? DEFAULT_CRITICALITY_KEY);
    const config = this.options.config();
    this.valueGuards.use(config);
    const domain = config.domains.get(request.domain);
    const requestHits = request.hitsAddend > 0 ? request.hitsAddend : 1;
    const trace = decideOptions.trace;
    trace?.request(request.domain, request.descriptors.length);

    // One instant for the whole decision: which rules are in force (valid_from / valid_until), the counting and
    // the cost predictions.
    const nowMs = this.options.clock.nowMs();
    const costs = { estimator: this.costs, nowMs };
    const resolved = request.descriptors.map((d) => resolve(request.domain, domain, d, requestHits, nowMs, costs));
    applyReplaces(resolved);

    const checkOnly = decideOptions.checkOnly === true;
    const { checks, refunds, checkLimits, hasOnLimit } = planChecks(resolved, {
      keyPrefix: this.options.keyPrefix,
      domain: request.domain,
      envoyKeys: this.options.keyFormat === 'envoy',
      shadowMode: this.options.shadowMode === true,
      quotaMode: this.options.quotaMode === true,
      criticality,
      nowMs,
      ...(decideOptions.deadlineMs !== undefined ? { delayDeadlineMs: decideOptions.deadlineMs - (this.options.delayMarginMs?.() ?? 0) } : {}),
      checkOnly,
      // A dry run neither fills a max_values guard nor counts in its metric.
      ...(checkOnly ? {} : { valueGuards: this.valueGuards, onPastBound: this.onPastBound }),
    });

    // Refunds first, so the answer's remaining includes them; a dry run gives nothing back.
    if (refunds.length > 0 && !checkOnly) await this.options.store.refund?.(refunds, nowMs);
    const storeStarted = trace === undefined ? 0 : performance.now();
    const pending =
      checks.length === 0 ? undefined : this.options.store.apply(checkOnly ? readOnlyChecks(checks) : checks, nowMs, { deadlineMs: decideOptions.deadlineMs });
    const observed = pending === undefined ? [] : await (trace === undefined ? pending : traceStore(trace, checks.length, storeStarted, pending));
    const stored = checkOnly ? previewOutcomes(checks, observed, nowMs) : observed;
    // A copy only when some check ran above its configured limit (a soft or share ceiling).
    let reported = stored;
    for (let i = 0; i < stored.length; i++) {
      if (checks[i]!.limit <= checkLimits[i]!.requestsPerUnit) continue;
      if (reported === stored) reported = stored.slice();
      reported[i] = { ...stored[i]!, remaining: reportedRemaining(checks[i]!, checkLimits[i]!, stored[i]!.remaining) };
    }
    // on_limit exponential_backoff moves a rejection's reset (and so its retry-after) out.
    const owners = hasOnLimit ? checkOwners(resolved) : undefined;
    const outcomes = owners === undefined ? reported : withBackoff(owners, reported);
    const observer = checkOnly ? noopObserver : this.observer;

    const statuses: DescriptorStatus[] = [];
    const applied: AppliedLimit[] = [];
    const quotaDescriptors: number[] = [];
    const quotaViolations: number[] = [];
    const passedMetadata: NonNullable<Resolved['metadata']>[] = [];
    let overLimit = false;
    const quotaAll = this.options.quotaMode === true;
    for (let index = 0; index < resolved.length; index++) {
      const r = resolved[index]!;
      const status = this.describe(request.domain, r, { outcomes, checks }, applied, observer);
      if (r.metadata !== undefined && passes(r, outcomes)) passedMetadata.push(r.metadata);
      if (status.code === 'OVER_LIMIT' && enforced(r, this.options.shadowMode, quotaAll)) overLimit = true;
      if (trace !== undefined && status.code === 'OVER_LIMIT') trace.overLimit(r.statsKey, enforced(r, this.options.shadowMode, quotaAll));
      // QUOTA_MODE counts descriptors without a limit too (they pass), as the reference does
      if (inQuotaMode(r, quotaAll) && (quotaAll || r.limits.length > 0)) {
        quotaDescriptors.push(index);
        if (r.limits.some((_, j) => outcomes[r.firstCheck + j]?.allowed === false)) quotaViolations.push(index);
      }
      statuses.push(status);
    }
    // envoyproxy/ratelimit: quota-mode descriptors only report, unless every one of them is over; then they
    // reject the request like ordinary limits.
    if (quotaDescriptors.length > 0 && quotaViolations.length === quotaDescriptors.length) {
      overLimit = true;
      for (const i of quotaViolations) statuses[i] = { ...statuses[i]!, code: 'OVER_LIMIT', limitRemaining: 0 };
      for (const a of applied) if (a.quotaMode) a.enforced = true;
    }

    const reports: CheckReport[] = [];
    for (const r of resolved) {
      for (let j = 0; j < r.limits.length; j++) {
        const limit = r.limits[j]!;
        if (hasThrottling(limit) || limit.softRequestsPerUnit > 0)
          reports.push({ check: checks[r.firstCheck + j]!, limit, outcome: stored[r.firstCheck + j]!, policyName: policyName(r, limit) });
      }
    }
    const predicted = hasCost(resolved)
      ? reportCosts(request.domain, resolved, outcomes, { ...costs, observer, dryRun: checkOnly, admitted: !overLimit })
      : undefined;
    const throttled = throttlingSignals(reports, !overLimit, criticality);
    if (throttled !== undefined) observer.onThrottling?.(request.domain, criticality, throttled.counts);
    const decision: RateLimitDecision = {
      overallCode: overLimit ? 'OVER_LIMIT' : 'OK',
      statuses,
      responseHeadersToAdd:
        throttled === undefined
          ? buildResponseHeaders(applied, overLimit, this.options.headers)
          : [...buildResponseHeaders(applied, overLimit, this.options.headers), ...throttled.headers],
      requestHeadersToAdd: [],
      ...optional(
        'dynamicMetadata',
        withPrediction(
          this.options.responseDynamicMetadata === true
            ? responseMetadata(original, { descriptors: quotaDescriptors, violations: quotaViolations }, passedMetadata)
            : undefined,
          predicted,
        ),
      ),
      ...(anyStoreFailure(outcomes) ? { storeFailure: true } : {}),
    };
    observer.onDecision(request.domain, overLimit, performance.now() - started);
    observer.onDecided?.(original, decision);
    trace?.decided(decision.overallCode, decision.storeFailure === true);
    // on_limit: the rejection's message, degraded request headers, or the wait for a reserved slot.
    return owners === undefined
      ? decision
      : this.atLimit.finish(
          decision,
          { request, checks, owners, outcomes, nowMs, ...(decideOptions.call !== undefined ? { call: decideOptions.call } : {}) },
          observer,
        );
  }

  /** The `max_values` guards in use: per bounded limit, the values tracked in its window and those past the bound. */
  valueGuardStates(): ValueGuardState[] {
    return this.valueGuards.states();
  }

  private readonly onPastBound = (domain: string, rule: string, action: 'overflow' | 'reject'): void => this.observer.onPastBound?.(domain, rule, action);

  /** The status of one descriptor from the outcomes of its limits; collects what the headers need. */
  private describe(
    domain: string,
    r: Resolved,
    { outcomes, checks }: { readonly outcomes: readonly LimitOutcome[]; readonly checks: readonly LimitCheck[] },
    applied: AppliedLimit[],
    observer: DecisionObserver,
  ): DescriptorStatus {
    if (r.rule?.unlimited === true) return { code: 'OK', limitRemaining: MAX_UINT32 };
    if (r.limits.length === 0) return { code: 'OK', limitRemaining: 0 };

    // The limit that speaks for the descriptor: a rejecting one (longest wait) or else the tightest one.
    let chosen = 0;
    let rejected = false;
    let nearLimit = false;
    const quotaAll = this.options.quotaMode === true;
    const isEnforced = enforced(r, this.options.shadowMode, quotaAll);
    const quotaMode = inQuotaMode(r, quotaAll);
    for (let j = 0; j < r.limits.length; j++) {
      const limit = r.limits[j]!;
      const o = outcomes[r.firstCheck + j]!;
      const best = outcomes[r.firstCheck + chosen]!;
      if (!o.allowed) {
        if (!rejected || o.resetMs > best.resetMs) chosen = j;
        rejected = true;
      } else if (!rejected && o.remaining < best.remaining) chosen = j;
      if (o.allowed && r.hits > 0 && limit.requestsPerUnit - o.remaining > limit.requestsPerUnit * this.options.nearLimitRatio) nearLimit = true;
      const windowMs = limit.calendar === undefined ? undefined : checks[r.firstCheck + j]!.windowMs;
      applied.push({ limit, outcome: o, policyName: policyName(r, limit), enforced: isEnforced, quotaMode, ...(windowMs !== undefined ? { windowMs } : {}) });
    }
    const limit = r.limits[chosen]!;
    const outcome = outcomes[r.firstCheck + chosen]!;
    const shadow = r.rule !== undefined && (r.rule.shadowMode || this.options.shadowMode === true);
    const quota = quotaMode;
    observer.onDescriptor({
      domain,
      statsKey: r.statsKey,
      hits: r.hits,
      overLimit: rejected,
      nearLimit: !rejected && nearLimit,
      shadowMode: rejected && shadow,
      quotaMode: rejected && quota,
      rule: r.rule,
      entries: r.counterEntries,
    });
    // A quota-mode descriptor over its limit reads OVER_LIMIT while the request may still be admitted (the
    // overall code decides), as envoyproxy/ratelimit answers it.
    return {
      code: rejected && (isEnforced || (quota && !shadow)) ? 'OVER_LIMIT' : 'OK',
      currentLimit: {
        ...(limit.name !== undefined ? { name: limit.name } : {}),
        requestsPerUnit: limit.requestsPerUnit,
        unit: limit.unit,
        windowSeconds: limit.windowMs / 1000,
      },
      limitRemaining: rejected ? 0 : Math.min(outcome.remaining, MAX_UINT32),
      durationUntilResetMs: outcome.resetMs,
    };
  }
}

/**
 * Whether a descriptor passed as envoyproxy/ratelimit counts it for the response's `metadata`: its rule is not
 * unlimited, some limit of it is left after `replaces`, and its status there is not OVER_LIMIT (a shadow_mode
 * rule's never is; SHADOW_MODE changes only the overall code there, so it does not count).
 */
function passes(r: Resolved, outcomes: readonly LimitOutcome[]): boolean {
  if (r.rule === undefined || r.rule.unlimited || r.limits.length === 0) return false;
  if (r.rule.shadowMode) return true;
  for (let j = 0; j < r.limits.length; j++) if (outcomes[r.firstCheck + j]?.allowed === false) return false;
  return true;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

function anyStoreFailure(outcomes: readonly LimitOutcome[]): boolean {
  for (const o of outcomes) if (o.storeFailure === true) return true;
  return false;
}

function validate(request: RateLimitRequest): void {
  if (request.domain === '') throw new InvalidRequestError('rate limit domain must not be empty');
  if (request.descriptors.length === 0) throw new InvalidRequestError('rate limit descriptor list must not be empty');
}
