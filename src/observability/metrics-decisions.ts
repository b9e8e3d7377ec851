/**
 * The decisions' metrics, fed by the engine through DecisionObserver: decisions by domain and code and their
 * duration, the per-rule counters (also under envoyproxy/ratelimit's names), the at-the-limit actions,
 * throttling, oversized input and folded series. Label values come from the rules in use (SeriesBounds).
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { DecisionObserver } from '../core/observer.js';
import { ConfiguredCounter, removeSeries } from './metrics-configured.js';
import { UNKNOWN_DOMAIN, type RulesSnapshot, type SeriesBounds } from './metrics-labels.js';
import { onLimitMetrics } from './metrics-on-limit.js';
import { costMetrics } from './metrics-cost.js';
import { PendingCounts, type PendingSeries } from './metrics-pending.js';
import { referenceRuleCounters } from './metrics-reference.js';
import { rulesTimeMetrics, type RuleValidityCounts } from './metrics-rules-time.js';
import { throttlingMetrics } from './metrics-throttling.js';

const CODES = ['OK', 'OVER_LIMIT'] as const;
/**
 * The series of the per-rule counters and of decisions, found once per (domain, stats key) rather than
 * hashed from a label object on every increment. Cleared (after a flush) whenever series are removed
 * (setRules) or the detailed-series cap changes, so a removed series is never counted through a stale
 * record; bounded like the series themselves (SeriesBounds), and emptied if it ever outgrows CHILD_CACHE_MAX.
 * A folded report (key `other` past the cap) is not cached: its stats key comes from the request.
 */
const CHILD_CACHE_MAX = 100_000;

export interface DecisionMetrics {
  readonly observer: DecisionObserver;
  /** The series part of Metrics.setRules: per-rule and per-domain series created at zero, those gone removed. */
  setRules(snapshot: RulesSnapshot): void;
  /** Distinct request-derived stats keys (detailed_metric, value_to_metric) kept per domain before `other`. */
  setMaxDetailedSeries(max: number): void;
  /** Exports the rules by validity per domain, read at each scrape (metrics-rules-time.ts). */
  watchRuleValidity(counts: RuleValidityCounts): void;
}

export function decisionMetrics(registers: Registry[], bounds: SeriesBounds): DecisionMetrics {
  // Per-request counts are added up here and handed to the counters when they are read (metrics-pending.ts).
  const flush = { rules: () => {}, decisions: () => {} };
  const decisions = new Counter({
    name: 'ratelimit_decisions_total',
    help: 'Decisions (ShouldRateLimit and ext_authz Check) by domain (configured name, or `unknown`) and overall code.',
    labelNames: ['domain', 'code'] as const,
    registers,
    collect: () => flush.decisions(),
  });
  const duration = new Histogram({
    name: 'ratelimit_decision_duration_seconds',
    help: 'Time to decide one request, store round trip included.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers,
  });
  const perRule = ruleCounters(registers, bounds, () => flush.rules());
  const atLimit = onLimitMetrics(registers, bounds);
  const throttling = throttlingMetrics(registers, bounds);
  const cost = costMetrics(registers, bounds);
  const rulesTime = rulesTimeMetrics(registers, bounds);
  // The same counts under envoyproxy/ratelimit's Prometheus names (metrics-reference.ts).
  const byName = new Map(
    ['ratelimit_hits_total', 'ratelimit_over_limit_total', 'ratelimit_near_limit_total', 'ratelimit_within_limit_total', 'ratelimit_shadow_mode_total'].map(
      (name, i) => [name, perRule[i]!],
    ),
  );
  referenceRuleCounters(registers, (name) => byName.get(name)!);
  const oversized = new Counter({
    name: 'ratelimit_oversized_input_total',
    help: 'Requests decided with client-shaped input beyond its bound: a value longer than MAX_VALUE_BYTES (counted under a hash of it), a hits_addend above MAX_HITS_ADDEND (counted as 2^32-1).',
    labelNames: ['field'] as const,
    registers,
  });
  for (const field of ['value', 'hits_addend']) oversized.inc({ field }, 0);
  const folded = new Counter({
    name: 'ratelimit_detailed_series_folded_total',
    help: 'Descriptor reports whose request-derived stats key was counted under key `other` (METRICS_MAX_DETAILED_SERIES reached).',
    labelNames: ['domain'] as const,
    registers,
  });
  for (const code of CODES) decisions.inc({ domain: UNKNOWN_DOMAIN, code }, 0);

  const ruleCounts = new PendingCounts<'domain' | 'key'>(perRule);
  const decisionCounts = new PendingCounts<'domain' | 'code'>([decisions]);
  flush.rules = ruleCounts.flush;
  flush.decisions = decisionCounts.flush;
  let cachedSeries = 0;
  const ruleSeries = new Map<string, Map<string, PendingSeries<'domain' | 'key'>>>();
  const seriesById = new Map<string, PendingSeries<'domain' | 'key'>>();
  /** Per domain label: its OK and OVER_LIMIT series (CODES order). */
  const decisionSeries = new Map<string, PendingSeries<'domain' | 'code'>[]>();
  const forgetSeries = () => {
    ruleCounts.flush();
    decisionCounts.flush();
    ruleSeries.clear();
    seriesById.clear();
    decisionSeries.clear();
    cachedSeries = 0;
  };
  const seriesOf = (domain: string, statsKey: string): PendingSeries<'domain' | 'key'> => {
    const cached = ruleSeries.get(domain)?.get(statsKey);
    if (cached !== undefined) return cached;
    const s = bounds.labels(domain, statsKey);
    if (s.folded) folded.inc({ domain: s.domain });
    const id = `${s.domain}\0${s.key}`;
    let series = seriesById.get(id);
    if (series === undefined) {
      if (cachedSeries >= CHILD_CACHE_MAX) forgetSeries();
      series = ruleCounts.series({ domain: s.domain, key: s.key });
      seriesById.set(id, series);
    }
    if (!s.folded) {
      let byKey = ruleSeries.get(domain);
      if (byKey === undefined) ruleSeries.set(domain, (byKey = new Map<string, PendingSeries<'domain' | 'key'>>()));
      byKey.set(statsKey, series);
      cachedSeries++;
    }
    return series;
  };
  const observer: DecisionObserver = {
    onDescriptor(r) {
      // The order of perRule: total, over, near, within, shadow, quota.
      const series = seriesOf(r.domain, r.statsKey);
      ruleCounts.add(series, 0, r.hits);
      ruleCounts.add(series, r.overLimit ? 1 : 3, r.hits);
      if (r.nearLimit) ruleCounts.add(series, 2, r.hits);
      if (r.shadowMode) ruleCounts.add(series, 4, r.hits);
      if (r.quotaMode) ruleCounts.add(series, 5, r.hits);
    },
    onThrottling: throttling.onThrottling,
    onDecision(domain, over, ms) {
      const name = bounds.domain(domain);
      let series = decisionSeries.get(name);
      if (series === undefined) {
        if (decisionSeries.size >= CHILD_CACHE_MAX) forgetSeries();
        series = CODES.map((code) => decisionCounts.series({ domain: name, code }));
        decisionSeries.set(name, series);
      }
      decisionCounts.add(series[over ? 1 : 0]!, 0, 1);
      duration.observe(ms / 1000);
    },
    onOversized(_domain, field) {
      oversized.inc({ field });
    },
    onAtLimit: atLimit.onAtLimit,
    onDelayReleased: atLimit.onDelayReleased,
    onCost: cost.onCost,
    onPastBound: rulesTime.onPastBound,
  };
  return {
    observer,
    setRules(snapshot) {
      forgetSeries();
      const { removedKeys, removedDomains } = bounds.setRules(snapshot);
      rulesTime.setRules(snapshot);
      removeSeries(perRule, removedKeys);
      for (const domain of removedDomains) {
        folded.remove({ domain });
        for (const code of CODES) decisions.remove({ domain, code });
      }
      for (const d of snapshot.domains) {
        folded.inc({ domain: d.name }, 0);
        for (const code of CODES) decisions.inc({ domain: d.name, code }, 0);
      }
    },
    watchRuleValidity: (counts) => rulesTime.watchRuleValidity(counts),
    setMaxDetailedSeries(max) {
      forgetSeries(); // a folded key may be admitted from now on
      bounds.setMaxDetailed(max);
    },
  };
}

/** The per-rule counters, in the order the observer indexes them: total, over, near, within, shadow, quota. */
function ruleCounters(registers: Registry[], bounds: SeriesBounds, flush: () => void): ConfiguredCounter[] {
  const labelNames = ['domain', 'key'] as const;
  const counter = (name: string, help: string) => new ConfiguredCounter({ name, help, labelNames, registers, collect: flush }, () => bounds.configuredKeys());
  return [
    counter('ratelimit_hits_total', "Hits counted against a rule (key: the rule's stats key as in envoyproxy/ratelimit, or `other`)."),
    counter('ratelimit_over_limit_total', "Hits over a rule's limit (enforced or not)."),
    counter('ratelimit_near_limit_total', 'Admitted hits above NEAR_LIMIT_RATIO of a limit.'),
    counter('ratelimit_within_limit_total', 'Admitted hits.'),
    counter('ratelimit_shadow_mode_total', 'Hits over a shadow_mode rule (admitted).'),
    counter('ratelimit_quota_mode_total', 'Hits over a quota_mode rule (its status OVER_LIMIT; the request admitted unless every quota descriptor is over).'),
  ];
}
