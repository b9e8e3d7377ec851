/**
 * Every Prometheus metric of the service, declared once, here and nowhere else. The metrics table of docs/metrics.md
 * is checked against these declarations by a test. The engine reports through the DecisionObserver interface,
 * so the core never imports prom-client. Label values come from the rules in use, never from requests
 * (metrics-labels.ts); labelled series exist (at zero) from start and from every reload.
 */
import { GUARD_ACTIONS } from '../server/grpc/guard/connection-guard.js';
import { readFileSync } from 'node:fs';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SeriesBounds, UNKNOWN_DOMAIN, type RulesSnapshot } from './metrics-labels.js';
import { capacityMetrics, type CapacityMetrics } from './metrics-capacity.js';
import { decisionMetrics, type DecisionMetrics } from './metrics-decisions.js';
import { rlqsMetrics, type RlqsMetrics } from './metrics-rlqs.js';
import { storeMetrics, type StoreMetrics } from './metrics-store.js';
import { NEVER_MS, replaceEventLoopLagGauges } from './event-loop-lag.js';
import { scrapedGauge } from './metrics-scraped.js';
import { ruleLimitGauge } from './metrics-limits.js';
import { xdsMetrics, type XdsMetricsStatus } from './metrics-xds.js';
import { processMetrics } from './process-metrics.js';
import type { ReferenceStats } from './reference-stats/reference-stats.js';
import type { DecisionObserver } from '../core/observer.js';

/** Default of METRICS_MAX_DETAILED_SERIES. */
export const DEFAULT_MAX_DETAILED_SERIES = 1000;
/** The gRPC statuses the service answers with (server/grpc/grpc-errors.ts), pre-created at zero. */
const GRPC_ERROR_CODES = ['INVALID_ARGUMENT', 'UNAVAILABLE', 'INTERNAL'] as const;
const FAILURE_MODES = ['open', 'closed', 'local'] as const;
const AUTHZ_RESULTS = ['allowed', 'over_limit', 'unknown_domain', 'no_descriptors', 'store_failure'] as const;

export interface Metrics extends CapacityMetrics, RlqsMetrics, DecisionMetrics, StoreMetrics {
  readonly registry: Registry;
  readonly grpcErrors: Counter<'code'>;
  readonly grpcLateAnswers: Counter<'method'>;
  /** What the gRPC port's connection guard did (server/grpc/guard/connection-guard.ts), by action. */
  readonly grpcGuard: Counter<'action'>;
  /** Exports the open gRPC connections and Watch calls. */
  watchGrpcConnections(stats: () => { connections: number; watches: number }): void;
  readonly grpcRequestDuration: Histogram<'method'>;
  /** ext_authz Check calls answered (not gRPC errors), by domain (configured, or `unknown`) and result (authz/authorize.ts). */
  countAuthzCheck(domain: string, result: string): void;
  /** Exports the deadline margin in use (server/grpc/deadline-margin.ts). */
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
  /** Exports how many delayed requests (on_limit delay) wait for their slot right now: the engine's live timers. */
  watchDelayWaits(pending: () => number): void;
  /** Exports the state of the rules over xDS (CONFIG_TYPE=GRPC_XDS_SOTW). */
  watchXds(status: () => XdsMetricsStatus): void;
  /** envoyproxy/ratelimit's stats under its names (statsd, a statsd_exporter mapping), when one is on (app/start-reference-stats.ts). */
  readonly reference: ReferenceStats | undefined;
  /** Turns the reference's stats on: from now on `observer` reports each descriptor to them too. Call before the engine takes `observer`. */
  useReference(stats: ReferenceStats): void;
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
    processMetrics([registry]);
  }
  const registers = [registry];
  const bounds = new SeriesBounds(options.maxDetailedSeries ?? DEFAULT_MAX_DETAILED_SERIES);

  const capacity = capacityMetrics(registers);
  const rlqs = rlqsMetrics(registers);
  const store = storeMetrics(registers);
  new Gauge({
    name: 'ratelimit_build_info',
    help: 'Always 1; the labels name the running build (package version, Node.js version).',
    labelNames: ['version', 'node_version'] as const,
    registers,
  }).set({ version: packageVersion(), node_version: process.version }, 1);
  const decisions = decisionMetrics(registers, bounds);
  const configVersion = new Gauge({
    name: 'ratelimit_config_version_info',
    help: 'Always 1; the label is the content hash of the rules in use (as at GET /rules).',
    labelNames: ['version'] as const,
    registers,
  });
  const setRuleLimits = ruleLimitGauge(registers);
  const configDomains = new Gauge({ name: 'ratelimit_config_domains', help: 'Domains in the rules in use.', registers });
  let currentVersion: string | undefined;

  const grpcErrors = new Counter({
    name: 'ratelimit_grpc_errors_total',
    help: 'Requests answered with a gRPC error, by status code.',
    labelNames: ['code'] as const,
    registers,
  });
  for (const code of GRPC_ERROR_CODES) grpcErrors.inc({ code }, 0);
  const configReloads = new Counter({
    name: 'ratelimit_config_reloads_total',
    help: 'Rule reloads by result (success | failure).',
    labelNames: ['result'] as const,
    registers,
  });
  for (const result of ['success', 'failure']) configReloads.inc({ result }, 0);
  const storeFallbacks = new Counter({
    name: 'ratelimit_store_fallbacks_total',
    help: 'Decisions made by FAILURE_MODE because the store could not answer in time.',
    labelNames: ['mode'] as const,
    registers,
  });
  for (const mode of FAILURE_MODES) storeFallbacks.inc({ mode }, 0);

  const authzChecks = new Counter({
    name: 'ratelimit_authz_checks_total',
    help: 'ext_authz Check answers by domain (configured name, or `unknown`) and result: allowed, over_limit, unknown_domain, no_descriptors, store_failure (503, FAILURE_MODE=closed).',
    labelNames: ['domain', 'result'] as const,
    registers,
  });
  for (const result of AUTHZ_RESULTS) authzChecks.inc({ domain: UNKNOWN_DOMAIN, result }, 0);

  const grpcGuard = new Counter({
    name: 'ratelimit_grpc_guard_total',
    help: 'gRPC connection guard actions: connection_refused, reset_goaway (a connection retired for its resets), peer_refused (GRPC_RESET_REFUSE_ADDRESS), message_timeout, idle_close, watch_refused.',
    labelNames: ['action'] as const,
    registers,
  });
  for (const action of [...GUARD_ACTIONS, 'watch_refused']) grpcGuard.inc({ action }, 0);

  const metrics: Metrics = {
    ...capacity,
    ...rlqs,
    ...store,
    registry,
    reference: undefined,
    observer: decisions.observer,
    useReference(stats) {
      // With them off the observer is the decisions' own: nothing more per descriptor.
      const m = metrics as { reference: ReferenceStats | undefined; observer: DecisionObserver };
      m.reference = stats;
      m.observer = {
        ...decisions.observer,
        onDescriptor(r) {
          decisions.observer.onDescriptor(r);
          stats.onDescriptor(r);
        },
      };
    },
    grpcErrors,
    countAuthzCheck: (domain, result) => authzChecks.inc({ domain: bounds.domain(domain), result }),
    grpcGuard,
    watchXds(status) {
      xdsMetrics(registers, status);
    },
    watchDelayWaits(pending) {
      scrapedGauge(
        registers,
        'ratelimit_on_limit_waiting',
        'Delayed requests (on_limit delay) waiting for their reserved slot now; a call that ends stops its wait at once.',
        pending,
      );
    },
    watchGrpcConnections(stats) {
      scrapedGauge(registers, 'ratelimit_grpc_connections', 'Open HTTP/2 connections on the gRPC port (GRPC_MAX_CONNECTIONS).', () => stats().connections);
      scrapedGauge(registers, 'ratelimit_grpc_watch_streams', 'Open grpc.health.v1 Watch calls (GRPC_MAX_WATCH_STREAMS).', () => stats().watches);
    },
    grpcLateAnswers: new Counter({
      name: 'ratelimit_grpc_late_answers_total',
      help: "Unary calls answered after the caller's deadline, by method.",
      labelNames: ['method'] as const,
      registers,
    }),
    grpcRequestDuration: new Histogram({
      name: 'ratelimit_grpc_request_duration_seconds',
      help: 'Unary gRPC calls from headers received to status sent (queueing included), by method.',
      labelNames: ['method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.05, 0.1, 0.5],
      registers,
    }),
    configReloads,
    configLastReloadSuccess: new Gauge({
      name: 'ratelimit_config_last_reload_success',
      help: '1 if the last reload succeeded, 0 if the last good rules are still in use after a failure.',
      registers,
    }),
    configLastReloadTime: new Gauge({
      name: 'ratelimit_config_last_reload_timestamp_seconds',
      help: 'Unix time of the last rules load or reload attempt (successful or not).',
      registers,
    }),
    configDomains,
    storeFallbacks,
    watchStoreReady(ready) {
      scrapedGauge(
        registers,
        'ratelimit_store_ready',
        '1 while the counter store decides successfully (Redis: connected and the last calls or probe succeeded), else 0.',
        () => (ready() ? 1 : 0),
      );
    },
    setRules(snapshot) {
      decisions.setRules(snapshot);
      setRuleLimits(snapshot.limits ?? []);
      if (currentVersion !== undefined && currentVersion !== snapshot.version) configVersion.remove({ version: currentVersion });
      configVersion.set({ version: snapshot.version }, 1);
      currentVersion = snapshot.version;
      configDomains.set(snapshot.domains.length);
    },
    setMaxDetailedSeries: (max) => decisions.setMaxDetailedSeries(max),
    watchRuleValidity: (counts) => decisions.watchRuleValidity(counts),
    watchDeadlineMargin(ms) {
      scrapedGauge(
        registers,
        'ratelimit_grpc_deadline_margin_seconds',
        "Time kept before each caller's deadline: DEADLINE_MARGIN_MS, or more as measured from event-loop and send delay.",
        () => ms() / 1000,
      );
    },
  };
  return metrics;
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
