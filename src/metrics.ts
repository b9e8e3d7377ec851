/**
 * Every Prometheus metric of the service, declared once (style.md #13). The README's metrics table is
 * checked against METRIC_DOCS by a test. The engine reports through the DecisionObserver interface, so
 * the core never imports prom-client.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DecisionObserver } from './core/observer.js';

export interface Metrics {
  readonly registry: Registry;
  readonly observer: DecisionObserver;
  readonly grpcErrors: Counter<'code'>;
  readonly grpcLateAnswers: Counter<'method'>;
  readonly grpcRequestDuration: Histogram<'method'>;
  /** Exports the deadline margin in use (server/deadline-margin.ts). */
  watchDeadlineMargin(ms: () => number): void;
  readonly configReloads: Counter<'result'>;
  readonly configLastReloadSuccess: Gauge;
  readonly configDomains: Gauge;
  readonly storeFallbacks: Counter<'mode'>;
  readonly storeReady: Gauge;
  /** Exports the Redis store's own counters (requests, script calls, round trips...). */
  watchRedis(stats: () => { requests: number; scriptCalls: number; roundTrips: number; crossSlotRequests: number; failures: number; expiredCalls: number; lateCommits: number }): void;
  /** Exports the over-limit cache's hit count and size. */
  watchOverLimitCache(stats: () => { hits: number; entries: number }): void;
}

export function createMetrics(options: { defaultMetrics: boolean } = { defaultMetrics: true }): Metrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry, prefix: 'ratelimit_' });
  const registers = [registry];

  const decisions = new Counter({ name: 'ratelimit_decisions_total', help: 'ShouldRateLimit decisions by domain and overall code.', labelNames: ['domain', 'code'] as const, registers });
  const duration = new Histogram({
    name: 'ratelimit_decision_duration_seconds',
    help: 'Time to decide one request, store round trip included.',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers,
  });
  const labels = ['domain', 'key'] as const;
  const totalHits = new Counter({ name: 'ratelimit_total_hits', help: 'Hits counted against a rule (stats key as in envoyproxy/ratelimit).', labelNames: labels, registers });
  const overLimit = new Counter({ name: 'ratelimit_over_limit', help: 'Hits over a rule\'s limit (enforced or not).', labelNames: labels, registers });
  const nearLimit = new Counter({ name: 'ratelimit_near_limit', help: 'Admitted hits above NEAR_LIMIT_RATIO of a limit.', labelNames: labels, registers });
  const withinLimit = new Counter({ name: 'ratelimit_within_limit', help: 'Admitted hits.', labelNames: labels, registers });
  const shadowMode = new Counter({ name: 'ratelimit_shadow_mode', help: 'Hits over a shadow_mode rule (admitted).', labelNames: labels, registers });
  const quotaMode = new Counter({ name: 'ratelimit_quota_mode', help: 'Hits over a quota_mode rule (admitted, reported in dynamic metadata).', labelNames: labels, registers });

  const observer: DecisionObserver = {
    onDescriptor(r) {
      const l = { domain: r.domain, key: r.statsKey };
      totalHits.inc(l, r.hits);
      if (r.overLimit) overLimit.inc(l, r.hits);
      else withinLimit.inc(l, r.hits);
      if (r.nearLimit) nearLimit.inc(l, r.hits);
      if (r.shadowMode) shadowMode.inc(l, r.hits);
      if (r.quotaMode) quotaMode.inc(l, r.hits);
    },
    onDecision(domain, over, ms) {
      decisions.inc({ domain, code: over ? 'OVER_LIMIT' : 'OK' });
      duration.observe(ms / 1000);
    },
  };

  return {
    registry,
    observer,
    grpcErrors: new Counter({ name: 'ratelimit_grpc_errors_total', help: 'Requests answered with a gRPC error, by status code.', labelNames: ['code'] as const, registers }),
    grpcLateAnswers: new Counter({ name: 'ratelimit_grpc_late_answers_total', help: 'Unary calls answered after the caller\'s deadline, by method.', labelNames: ['method'] as const, registers }),
    grpcRequestDuration: new Histogram({
      name: 'ratelimit_grpc_request_duration_seconds',
      help: 'Unary gRPC calls from headers received to status sent (queueing included), by method.',
      labelNames: ['method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.5],
      registers,
    }),
    configReloads: new Counter({ name: 'ratelimit_config_reloads_total', help: 'Rule reloads by result (success | failure).', labelNames: ['result'] as const, registers }),
    configLastReloadSuccess: new Gauge({ name: 'ratelimit_config_last_reload_success', help: '1 if the last reload succeeded, 0 if the last good rules are still in use after a failure.', registers }),
    configDomains: new Gauge({ name: 'ratelimit_config_domains', help: 'Domains in the rules in use.', registers }),
    storeFallbacks: new Counter({ name: 'ratelimit_store_fallbacks_total', help: 'Decisions made by FAILURE_MODE because the store could not answer in time.', labelNames: ['mode'] as const, registers }),
    storeReady: new Gauge({ name: 'ratelimit_store_ready', help: '1 while the counter store decides successfully (Redis: connected and the last calls or probe succeeded), else 0.', registers }),
    watchDeadlineMargin(ms) {
      new Gauge({
        name: 'ratelimit_grpc_deadline_margin_seconds',
        help: 'Time kept before each caller\'s deadline: DEADLINE_MARGIN_MS, or more as measured from event-loop and send delay.',
        registers,
        collect() {
          this.set(ms() / 1000);
        },
      });
    },
    watchRedis(stats) {
      // Counters kept by the store itself, read at scrape time.
      const counter = (name: string, help: string, pick: (s: ReturnType<typeof stats>) => number) =>
        new Counter({
          name,
          help,
          registers,
          collect() {
            this.reset();
            this.inc(pick(stats()));
          },
        });
      counter('ratelimit_redis_requests_total', 'Requests that needed Redis.', (s) => s.requests);
      counter('ratelimit_redis_script_calls_total', 'Batch script calls sent (one per request; per slot on Cluster).', (s) => s.scriptCalls);
      counter('ratelimit_redis_round_trips_total', 'Pipelines written to Redis (network round trips); below requests when concurrent requests share one.', (s) => s.roundTrips);
      counter('ratelimit_redis_cross_slot_requests_total', 'Requests whose limits spanned several Cluster slots (best effort across slots).', (s) => s.crossSlotRequests);
      counter('ratelimit_redis_failures_total', 'Requests Redis could not answer (then FAILURE_MODE decides).', (s) => s.failures);
      counter('ratelimit_redis_expired_calls_total', 'Script calls that reached Redis after the caller gave up, so did nothing (not counted).', (s) => s.expiredCalls);
      counter('ratelimit_redis_late_commits_total', 'Requests counted in Redis after the caller had given up and answered by FAILURE_MODE (should stay 0).', (s) => s.lateCommits);
    },
    watchOverLimitCache(stats) {
      new Counter({
        name: 'ratelimit_over_limit_cache_hits_total',
        help: 'Requests answered from the local over-limit cache without Redis.',
        registers,
        collect() {
          this.reset();
          this.inc(stats().hits);
        },
      });
      new Gauge({
        name: 'ratelimit_over_limit_cache_entries',
        help: 'Keys currently known to be over their limit.',
        registers,
        collect() {
          this.set(stats().entries);
        },
      });
    },
  };
}
