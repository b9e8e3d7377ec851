/**
 * Every Prometheus metric of the service, declared once (style.md #13). The metrics table of docs/metrics.md
 * is checked against these declarations by a test. The engine reports through the DecisionObserver interface,
 * so the core never imports prom-client. Label values come from the rules in use, never from requests
 * (metrics-labels.ts); labelled series exist (at zero) from start and from every reload.
 */
import { GUARD_ACTIONS } from '../server/guard/connection-guard.js';
import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DecisionObserver } from '../core/observer.js';
import { SeriesBounds, UNKNOWN_DOMAIN, type RulesSnapshot } from './metrics-labels.js';
import { capacityMetrics, type CapacityMetrics } from './metrics-capacity.js';
import { rlqsMetrics, type RlqsMetrics } from './metrics-rlqs.js';
import { PendingCounts, type PendingSeries } from './metrics-pending.js';
import { NEVER_MS, replaceEventLoopLagGauges } from './event-loop-lag.js';
import { scrapedCounter, scrapedGauge } from './metrics-scraped.js';
import { xdsMetrics, type XdsMetricsStatus } from './metrics-xds.js';
import { referenceRuleCounters } from './metrics-reference.js';
import { ConfiguredCounter, removeSeries } from './metrics-configured.js';

/** Default of METRICS_MAX_DETAILED_SERIES. */
export const DEFAULT_MAX_DETAILED_SERIES = 1000;
const CODES = ['OK', 'OVER_LIMIT'] as const;
/** The gRPC statuses the service answers with (server/grpc-errors.ts), pre-created at zero. */
const GRPC_ERROR_CODES = ['INVALID_ARGUMENT', 'UNAVAILABLE', 'INTERNAL'] as const;
const FAILURE_MODES = ['open', 'closed', 'local'] as const;
const AUTHZ_RESULTS = ['allowed', 'over_limit', 'unknown_domain', 'no_descriptors', 'store_failure'] as const;

export interface Metrics extends CapacityMetrics, RlqsMetrics {
  readonly registry: Registry;
  readonly observer: DecisionObserver;
  readonly grpcErrors: Counter<'code'>;
  readonly grpcLateAnswers: Counter<'method'>;
  /** What the gRPC port's connection guard did (server/guard/connection-guard.ts), by action. */
  readonly grpcGuard: Counter<'action'>;
  /** Exports the open gRPC connections and Watch calls. */
  watchGrpcConnections(stats: () => { connections: number; watches: number }): void;
  readonly grpcRequestDuration: Histogram<'method'>;
  /** ext_authz Check calls answered (not gRPC errors), by domain (configured, or `unknown`) and result (authz/authorize.ts). */
  countAuthzCheck(domain: string, result: string): void;
  /** Exports the deadline margin in use (server/deadline-margin.ts). */
  watchDeadlineMargin(ms: () => number): void;
  readonly configReloads: Counter<'result'>;
  readonly configLastReloadSuccess: Gauge;
  readonly configDomains: Gauge;
  readonly storeFallbacks: Counter<'mode'>;
  /** Exports whether the counter store decides successfully, read at scrape time. */
  watchStoreReady(ready: () => boolean): void;
  /** Unix time (seconds) of the last rules load or reload attempt, successful or not. */
  readonly configLastReloadTime: Gauge;
  /**
   * Installs the rules in use: the domain and key labels allowed from now on. Creates their series at zero
   * and removes the series of rules and domains that are gone. Call at start and after every good reload.
   */
  setRules(snapshot: RulesSnapshot): void;
  /** Distinct request-derived stats keys (detailed_metric, value_to_metric) kept per domain before `other`. */
  setMaxDetailedSeries(max: number): void;
  /** Exports the Redis store's own counters (requests, script calls, round trips...). */
  watchRedis(stats: () => { requests: number; scriptCalls: number; roundTrips: number; crossSlotRequests: number; failures: number; expiredCalls: number; lateCommits: number }): void;
  /** Exports the over-limit cache's hit count and size. */
  watchOverLimitCache(stats: () => { hits: number; entries: number }): void;
  /** Exports the memory store's size, its protected (over-limit) keys, evictions and unstored decisions. */
  watchMemory(stats: () => { keys: number; bytes: number; protectedKeys: number; expired: number; evicted: number; unstored: number }): void;
  /** Exports how many delayed requests (on_limit delay) wait for their slot right now: the engine's live timers. */
  watchDelayWaits(pending: () => number): void;
  /** Exports the state of the rules over xDS (CONFIG_TYPE=GRPC_XDS_SOTW). */
  watchXds(status: () => XdsMetricsStatus): void;
  /** Exports the quota leases' counters (src/lease/). */
  watchLeases(stats: () => { claims: number; leased: number; returned: number; unused: number; held: number }): void;
}

/** Sampling period of the ratelimit_nodejs_eventloop_lag_* gauges, ms. */
export const EVENT_LOOP_SAMPLE_MS = 1000;

export function createMetrics(options: { defaultMetrics?: boolean; maxDetailedSeries?: number } = {}): Metrics {
  const registry = new Registry();
  // The event-loop lag gauges sample once a second (observability/event-loop-lag.ts); a stall still shows in
  // their max; the deadline margin has its own sampling.
  if (options.defaultMetrics ?? true) {
    collectDefaultMetrics({ register: registry, prefix: 'ratelimit_', eventLoopMonitoringPrecision: NEVER_MS });
    replaceEventLoopLagGauges(registry, 'ratelimit_', EVENT_LOOP_SAMPLE_MS);
  }
  const registers = [registry];
  const bounds = new SeriesBounds(options.maxDetailedSeries ?? DEFAULT_MAX_DETAILED_SERIES);

  const capacity = capacityMetrics(registers);
  const rlqs = rlqsMetrics(registers);
  new Gauge({ name: 'ratelimit_build_info', help: 'Always 1; the labels name the running build (package version, Node.js version).', labelNames: ['version', 'node_version'] as const, registers })
    .set({ version: packageVersion(), node_version: process.version }, 1);
  // Per-request counts are added up here and handed to the counters when they are read (metrics-pending.ts).
  const flush = { rules: () => {}, decisions: () => {} };
  const decisions = new Counter({ name: 'ratelimit_decisions_total', help: 'Decisions (ShouldRateLimit and ext_authz Check) by domain (configured name, or `unknown`) and overall code.', labelNames: ['domain', 'code'] as const, registers, collect: () => flush.decisions() });
  const duration = new Histogram({
    name: 'ratelimit_decision_duration_seconds',
    help: 'Time to decide one request, store round trip included.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers,
  });
  const labels = ['domain', 'key'] as const;
  const configured = () => bounds.configuredKeys();
  const totalHits = new ConfiguredCounter({ name: 'ratelimit_hits_total', help: 'Hits counted against a rule (key: the rule\'s stats key as in envoyproxy/ratelimit, or `other`).', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const overLimit = new ConfiguredCounter({ name: 'ratelimit_over_limit_total', help: 'Hits over a rule\'s limit (enforced or not).', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const nearLimit = new ConfiguredCounter({ name: 'ratelimit_near_limit_total', help: 'Admitted hits above NEAR_LIMIT_RATIO of a limit.', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const withinLimit = new ConfiguredCounter({ name: 'ratelimit_within_limit_total', help: 'Admitted hits.', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const shadowMode = new ConfiguredCounter({ name: 'ratelimit_shadow_mode_total', help: 'Hits over a shadow_mode rule (admitted).', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const quotaMode = new ConfiguredCounter({ name: 'ratelimit_quota_mode_total', help: 'Hits over a quota_mode rule (its status OVER_LIMIT; the request admitted unless every quota descriptor is over).', labelNames: labels, registers, collect: () => flush.rules() }, configured);
  const delayed = new Counter({ name: 'ratelimit_on_limit_delayed_total', help: 'Requests admitted by on_limit delay: answered OK once their reserved slot came.', labelNames: ['domain'] as const, registers });
  const delays = new Histogram({
    name: 'ratelimit_on_limit_delay_seconds',
    help: 'How long on_limit delay held admitted requests for their reserved slot.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const delayReleased = new Counter({
    name: 'ratelimit_on_limit_delay_released_total',
    help: 'Delayed requests whose call ended (cancelled, deadline) before their slot came: result released = their reserved hits were given back to the store, failed = the store could not take them.',
    labelNames: ['domain', 'result'] as const,
    registers,
  });
  const degraded = new Counter({ name: 'ratelimit_on_limit_degraded_total', help: 'Requests over a limit admitted by on_limit degrade (with its request headers).', labelNames: ['domain'] as const, registers });
  // Throttling (docs/throttling.md): labels domain and criticality class only (bounded: domains × 3).
  const throttlingLabels = ['domain', 'class'] as const;
  const softExceeded = new Counter({ name: 'ratelimit_soft_exceeded_hits_total', help: 'Hits admitted above a limit by soft throttling (marked with x-ratelimit-soft-exceeded).', labelNames: throttlingLabels, registers });
  const softWarnings = new Counter({ name: 'ratelimit_soft_warning_hits_total', help: 'Hits admitted above soft_requests_per_unit and within the limit (marked with x-ratelimit-soft-warning).', labelNames: throttlingLabels, registers });
  const borrowed = new Counter({ name: 'ratelimit_elastic_borrowed_hits_total', help: 'Hits admitted above a limit by elastic throttling, on the rule\'s spare capacity.', labelNames: throttlingLabels, registers });
  const bansStarted = new Counter({ name: 'ratelimit_bans_started_total', help: 'Bans started by a rejection under a rule with `ban`.', labelNames: throttlingLabels, registers });
  const banRejections = new Counter({ name: 'ratelimit_ban_rejections_total', help: 'Limit checks rejected because their key was banned (not counted).', labelNames: throttlingLabels, registers });
  const perRule = [totalHits, overLimit, nearLimit, withinLimit, shadowMode, quotaMode];
  // The same counts under envoyproxy/ratelimit's Prometheus names (metrics-reference.ts).
  const byName = new Map([['ratelimit_hits_total', totalHits], ['ratelimit_over_limit_total', overLimit], ['ratelimit_near_limit_total', nearLimit], ['ratelimit_within_limit_total', withinLimit], ['ratelimit_shadow_mode_total', shadowMode]]);
  referenceRuleCounters(registers, (name) => byName.get(name)!);
  const oversized = new Counter({ name: 'ratelimit_oversized_input_total', help: 'Requests decided with client-shaped input beyond its bound: a value longer than MAX_VALUE_BYTES (counted under a hash of it), a hits_addend above MAX_HITS_ADDEND (counted as 2^32-1).', labelNames: ['field'] as const, registers });
  for (const field of ['value', 'hits_addend']) oversized.inc({ field }, 0);
  const folded = new Counter({ name: 'ratelimit_detailed_series_folded_total', help: 'Descriptor reports whose request-derived stats key was counted under key `other` (METRICS_MAX_DETAILED_SERIES reached).', labelNames: ['domain'] as const, registers });
  const configVersion = new Gauge({ name: 'ratelimit_config_version_info', help: 'Always 1; the label is the content hash of the rules in use (as at GET /rules).', labelNames: ['version'] as const, registers });
  const configDomains = new Gauge({ name: 'ratelimit_config_domains', help: 'Domains in the rules in use.', registers });
  let currentVersion: string | undefined;

  // The series of the per-rule counters and of decisions, found once per (domain, stats key) rather than
  // hashed from a label object on every increment. Cleared (after a flush) whenever series are removed
  // (setRules) or the detailed-series cap changes, so a removed series is never counted through a stale
  // record; bounded like the series themselves (SeriesBounds), and emptied if it ever outgrows CHILD_CACHE_MAX.
  // A folded report (key `other` past the cap) is not cached: its stats key comes from the request.
  const CHILD_CACHE_MAX = 100_000;
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
    onThrottling(domain, criticality, counts) {
      const l = { domain: bounds.domain(domain), class: criticality };
      if (counts.softExceeded > 0) softExceeded.inc(l, counts.softExceeded);
      if (counts.softWarnings > 0) softWarnings.inc(l, counts.softWarnings);
      if (counts.borrowed > 0) borrowed.inc(l, counts.borrowed);
      if (counts.bansStarted > 0) bansStarted.inc(l, counts.bansStarted);
      if (counts.banRejections > 0) banRejections.inc(l, counts.banRejections);
    },
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
    onAtLimit(domain, action, delayMs) {
      if (action === 'degraded') degraded.inc({ domain: bounds.domain(domain) });
      else {
        delayed.inc({ domain: bounds.domain(domain) });
        delays.observe(delayMs / 1000);
      }
    },
    onDelayReleased(domain, released) {
      delayReleased.inc({ domain: bounds.domain(domain), result: released ? 'released' : 'failed' });
    },
  };

  const grpcErrors = new Counter({ name: 'ratelimit_grpc_errors_total', help: 'Requests answered with a gRPC error, by status code.', labelNames: ['code'] as const, registers });
  for (const code of GRPC_ERROR_CODES) grpcErrors.inc({ code }, 0);
  const configReloads = new Counter({ name: 'ratelimit_config_reloads_total', help: 'Rule reloads by result (success | failure).', labelNames: ['result'] as const, registers });
  for (const result of ['success', 'failure']) configReloads.inc({ result }, 0);
  const storeFallbacks = new Counter({ name: 'ratelimit_store_fallbacks_total', help: 'Decisions made by FAILURE_MODE because the store could not answer in time.', labelNames: ['mode'] as const, registers });
  for (const mode of FAILURE_MODES) storeFallbacks.inc({ mode }, 0);
  for (const code of CODES) decisions.inc({ domain: UNKNOWN_DOMAIN, code }, 0);

  const authzChecks = new Counter({ name: 'ratelimit_authz_checks_total', help: 'ext_authz Check answers by domain (configured name, or `unknown`) and result: allowed, over_limit, unknown_domain, no_descriptors, store_failure (503, FAILURE_MODE=closed).', labelNames: ['domain', 'result'] as const, registers });
  for (const result of AUTHZ_RESULTS) authzChecks.inc({ domain: UNKNOWN_DOMAIN, result }, 0);

  const grpcGuard = new Counter({ name: 'ratelimit_grpc_guard_total', help: 'gRPC connection guard actions: connection_refused, reset_goaway (a connection retired for its resets), peer_refused (GRPC_RESET_REFUSE_ADDRESS), message_timeout, idle_close, watch_refused.', labelNames: ['action'] as const, registers });
  for (const action of [...GUARD_ACTIONS, 'watch_refused']) grpcGuard.inc({ action }, 0);

  return {
    ...capacity,
    ...rlqs,
    registry,
    observer,
    grpcErrors,
    countAuthzCheck: (domain, result) => authzChecks.inc({ domain: bounds.domain(domain), result }),
    grpcGuard,
    watchXds(status) {
      xdsMetrics(registers, status);
    },
    watchDelayWaits(pending) {
      scrapedGauge(registers, 'ratelimit_on_limit_waiting', 'Delayed requests (on_limit delay) waiting for their reserved slot now; a call that ends stops its wait at once.', pending);
    },
    watchGrpcConnections(stats) {
      scrapedGauge(registers, 'ratelimit_grpc_connections', 'Open HTTP/2 connections on the gRPC port (GRPC_MAX_CONNECTIONS).', () => stats().connections);
      scrapedGauge(registers, 'ratelimit_grpc_watch_streams', 'Open grpc.health.v1 Watch calls (GRPC_MAX_WATCH_STREAMS).', () => stats().watches);
    },
    grpcLateAnswers: new Counter({ name: 'ratelimit_grpc_late_answers_total', help: 'Unary calls answered after the caller\'s deadline, by method.', labelNames: ['method'] as const, registers }),
    grpcRequestDuration: new Histogram({
      name: 'ratelimit_grpc_request_duration_seconds',
      help: 'Unary gRPC calls from headers received to status sent (queueing included), by method.',
      labelNames: ['method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.5],
      registers,
    }),
    configReloads,
    configLastReloadSuccess: new Gauge({ name: 'ratelimit_config_last_reload_success', help: '1 if the last reload succeeded, 0 if the last good rules are still in use after a failure.', registers }),
    configLastReloadTime: new Gauge({ name: 'ratelimit_config_last_reload_timestamp_seconds', help: 'Unix time of the last rules load or reload attempt (successful or not).', registers }),
    configDomains,
    storeFallbacks,
    watchStoreReady(ready) {
      scrapedGauge(registers, 'ratelimit_store_ready', '1 while the counter store decides successfully (Redis: connected and the last calls or probe succeeded), else 0.', () => (ready() ? 1 : 0));
    },
    setRules(snapshot) {
      forgetSeries();
      const { removedKeys, removedDomains } = bounds.setRules(snapshot);
      removeSeries(perRule, removedKeys);
      for (const domain of removedDomains) {
        folded.remove({ domain });
        for (const code of CODES) decisions.remove({ domain, code });
      }
      for (const d of snapshot.domains) {
        folded.inc({ domain: d.name }, 0);
        for (const code of CODES) decisions.inc({ domain: d.name, code }, 0);
      }
      if (currentVersion !== undefined && currentVersion !== snapshot.version) configVersion.remove({ version: currentVersion });
      configVersion.set({ version: snapshot.version }, 1);
      currentVersion = snapshot.version;
      configDomains.set(snapshot.domains.length);
    },
    setMaxDetailedSeries(max) {
      forgetSeries(); // a folded key may be admitted from now on
      bounds.setMaxDetailed(max);
    },
    watchDeadlineMargin(ms) {
      scrapedGauge(registers, 'ratelimit_grpc_deadline_margin_seconds', 'Time kept before each caller\'s deadline: DEADLINE_MARGIN_MS, or more as measured from event-loop and send delay.', () => ms() / 1000);
    },
    watchRedis(stats) {
      // Counters kept by the store itself, read at scrape time.
      const counter = (name: string, help: string, pick: (s: ReturnType<typeof stats>) => number) =>
        scrapedCounter(registers, name, help, () => pick(stats()));
      counter('ratelimit_redis_requests_total', 'Requests that needed Redis.', (s) => s.requests);
      counter('ratelimit_redis_script_calls_total', 'Batch script calls sent (one per request; per slot on Cluster).', (s) => s.scriptCalls);
      counter('ratelimit_redis_round_trips_total', 'Pipelines written to Redis (network round trips); below requests when concurrent requests share one.', (s) => s.roundTrips);
      counter('ratelimit_redis_cross_slot_requests_total', 'Requests whose limits spanned several Cluster slots (best effort across slots).', (s) => s.crossSlotRequests);
      counter('ratelimit_redis_failures_total', 'Requests Redis could not answer (then FAILURE_MODE decides).', (s) => s.failures);
      counter('ratelimit_redis_expired_calls_total', 'Script calls that reached Redis after the caller gave up, so did nothing (not counted).', (s) => s.expiredCalls);
      counter('ratelimit_redis_late_commits_total', 'Requests counted in Redis after the caller had given up and answered by FAILURE_MODE (should stay 0).', (s) => s.lateCommits);
    },
    watchLeases(stats) {
      scrapedCounter(registers, 'ratelimit_lease_claims_total', 'Lease claims sent to Redis (one per burst on a key, not one per request).', () => stats().claims);
      scrapedCounter(registers, 'ratelimit_lease_units_leased_total', 'Units claimed for leases (counted in Redis at the claim).', () => stats().leased);
      scrapedCounter(registers, 'ratelimit_lease_units_returned_total', 'Unused leased units given back into the window (or bucket) they came from.', () => stats().returned);
      scrapedCounter(registers, 'ratelimit_lease_units_unused_total', 'Leased units neither admitted nor given back (window over, bucket refilled, give-back failed): the under-admission.', () => stats().unused);
      scrapedGauge(registers, 'ratelimit_lease_keys', 'Counter keys this replica holds a lease on.', () => stats().held);
    },
    watchOverLimitCache(stats) {
      scrapedCounter(registers, 'ratelimit_over_limit_cache_hits_total', 'Requests answered from the local over-limit cache without Redis.', () => stats().hits);
      scrapedGauge(registers, 'ratelimit_over_limit_cache_entries', 'Keys currently known to be over their limit.', () => stats().entries);
    },
    watchMemory(stats) {
      const gauge = (name: string, help: string, pick: (s: ReturnType<typeof stats>) => number) =>
        scrapedGauge(registers, name, help, () => pick(stats()));
      gauge('ratelimit_memory_keys', 'Keys held by the in-memory store.', (s) => s.keys);
      gauge('ratelimit_memory_bytes', 'Accounted bytes of the in-memory store (bounded by MEMORY_MAX_BYTES).', (s) => s.bytes);
      gauge('ratelimit_memory_protected_keys', 'Keys with no quota left, which eviction spares while other keys remain.', (s) => s.protectedKeys);
      new Counter({
        name: 'ratelimit_memory_evictions_total',
        help: 'Entries freed to make room or on expiry: reason expired (dead entries) or lru (live keys with quota left).',
        labelNames: ['reason'] as const,
        registers,
        collect() {
          const s = stats();
          this.reset();
          this.inc({ reason: 'expired' }, s.expired);
          this.inc({ reason: 'lru' }, s.evicted);
        },
      });
      scrapedCounter(registers, 'ratelimit_memory_unstored_total', 'New keys decided but not stored because every stored key was over its limit and memory was full.', () => stats().unstored);
    },
  };
}

/** The package version, from the package.json next to src/ (checkout) or dist/ (image). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}
