import type { ThrottlingCounts } from '../throttling/report.js';
import type { OversizedField } from '../vocab/request-limits.js';
import type { Criticality } from '../vocab/throttling.js';
import type { DescriptorEntry, RateLimitDecision, RateLimitRequest } from '../vocab/types.js';

/**
 * What the decision engine reports about each decision, so metrics and logs can be kept without the
 * core knowing about Prometheus. All methods are synchronous and must not throw.
 */
export interface DescriptorReport {
  readonly domain: string;
  /**
   * The rule's stats key (envoyproxy/ratelimit style: `domain.key_value.key2`). With detailed_metric,
   * value_to_metric or a request-level limit override it carries request values: a consumer that turns it
   * into labels must bound it (metrics-labels.ts does).
   */
  readonly statsKey: string;
  readonly hits: number;
  /** This descriptor was over at least one of its limits. */
  readonly overLimit: boolean;
  /** Admitted, but used more than NEAR_LIMIT_RATIO of a limit. */
  readonly nearLimit: boolean;
  /** Over limit, but not enforced (shadow_mode). */
  readonly shadowMode: boolean;
  /** Over limit, but not enforced (quota_mode). */
  readonly quotaMode: boolean;
  /** The rule that decided (absent when none matched): its stats key as configured and where it is written. */
  readonly rule?: { readonly statsKey: string; readonly source: string } | undefined;
  /** The entries that identify the counter (request values: bound them before keeping them). */
  readonly entries?: readonly DescriptorEntry[];
}

export interface DecisionObserver {
  onDescriptor(report: DescriptorReport): void;
  /** Throttling events of one request (soft, elastic, bans; src/throttling/report.ts), by criticality class. */
  onThrottling?(domain: string, criticality: Criticality, counts: ThrottlingCounts): void;
  /** `domain` is the request's, configured or not (bound it before using it as a label). */
  onDecision(domain: string, overallOverLimit: boolean, durationMs: number): void;
  /**
   * Every decision with the request as it arrived, for a debug line per decision (LOG_LEVEL=debug). Set only
   * when such a line is wanted: the engine then calls it after onDecision; otherwise it costs one check.
   */
  onDecided?(request: RateLimitRequest, decision: RateLimitDecision): void;
  /** on_limit: an admitted request was delayed by `delayMs` for its reserved slot, or admitted degraded. */
  onAtLimit?(domain: string, action: 'delayed' | 'degraded', delayMs: number): void;
  /** on_limit delay: a delayed request's call ended before its slot came; its reserved hits were given back (or the store failed to take them). */
  onDelayReleased?(domain: string, released: boolean): void;
  /** A request held client-shaped input beyond its bound (request-limits.ts), decided all the same; once per field kind. */
  onOversized?(domain: string, field: OversizedField): void;
  /**
   * Admission by predicted cost (src/cost/): an admitted call charged a prediction; a settlement that charged the
   * difference, or refunded it ('refund': the actual cost was below the prediction); a `predicted_cost` entry
   * counted as an ordinary charge because it did not parse ('unparsed') or its rule has no `predict_cost` ('unpredicted').
   */
  onCost?(domain: string, statsKey: string, event: CostEvent): void;
  /** A counter past its limit's `max_values` in the window: counted in the overflow counter, or rejected. `rule` is the rule's stats key (config path). */
  onPastBound?(domain: string, rule: string, action: 'overflow' | 'reject'): void;
}

export type CostEvent = 'prediction' | 'settlement' | 'refund' | 'unparsed' | 'unpredicted';

export const noopObserver: DecisionObserver = {
  onDescriptor: () => {},
  onDecision: () => {},
};

const OVERSIZED_MESSAGES: Readonly<Record<OversizedField, string>> = {
  value: 'a request held a descriptor value longer than MAX_VALUE_BYTES: decided and counted under a SHA-256 of the value',
  hits_addend: 'a request held a hits_addend above MAX_HITS_ADDEND: decided with hits 4294967295 (over every limit)',
};

/** `observer` that also writes one line per oversized request to `log` (rate-limited by the caller's log). */
export function withOversizedLog(observer: DecisionObserver, log: (message: string) => void): DecisionObserver {
  return {
    ...observer,
    onOversized(domain, field) {
      observer.onOversized?.(domain, field);
      log(OVERSIZED_MESSAGES[field]);
    },
  };
}
