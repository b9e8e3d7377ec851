/**
 * Start phase: the decision engine over the store and the rules, and the one health model every surface
 * reports (gRPC health, /healthcheck, /readyz, the store-ready gauge), fed by the store's own state
 * (connected AND deciding) and by whether rules are loaded.
 */
import type { RequestLimits } from '../vocab/request-limits.js';
import { RateLimiter } from '../core/rate-limiter.js';
import { withOversizedLog } from '../core/observer.js';
import { withCostLog } from '../observability/metrics-cost.js';
import { withTopKeys } from '../top/observe-top.js';
import { withDecisionLog } from '../observability/decision-log.js';
import { TopKeys } from '../top/top-keys.js';
import { clockTimer, type Timer } from '../vocab/timer.js';
import { DeadlineMargin } from '../server/grpc/deadline-margin.js';
import { HealthState, STORE_HEALTH_SERVICE } from '../server/health/grpc-health.js';
import { ServiceHealth } from '../server/health/service-health.js';
import { throttledLog } from '../storage/throttled-log.js';
import type { StartContext } from './start-context.js';
import type { StartedRules } from './start-rules.js';
import type { StartedStore } from './start-store.js';

export interface StartedEngine {
  readonly requestLimits: RequestLimits;
  readonly limiter: RateLimiter;
  /** The deadline kept before each caller's: DEADLINE_MARGIN_MS, or more as measured. */
  readonly margin: DeadlineMargin;
  readonly model: ServiceHealth;
  readonly health: HealthState;
  /** The top limited keys per rule (TOP_KEYS > 0), for GET /top and the status page. */
  readonly top: TopKeys | undefined;
}

export function startEngine(
  { settings, clock, log, metrics, teardown }: StartContext,
  rules: StartedRules,
  { store }: StartedStore,
  timer: Timer = clockTimer(clock),
): StartedEngine {
  const requestLimits: RequestLimits = {
    maxMessageBytes: settings.maxRequestBytes,
    maxDescriptors: settings.maxRequestDescriptors,
    maxEntries: settings.maxDescriptorEntries,
    maxKeyBytes: settings.maxKeyBytes,
    maxValueBytes: settings.maxValueBytes,
    maxHitsAddend: settings.maxHitsAddend,
  };
  // The engine's waits for delayed slots (on_limit delay), counted for /metrics.
  metrics.watchDelayWaits(() => timer.pending);
  const margin = new DeadlineMargin({ floorMs: settings.deadlineMarginMs }).start();
  teardown.defer('deadline margin', () => margin.stop());
  const { holder, xds } = rules;
  const top =
    settings.topKeys === 0 ? undefined : new TopKeys({ clock, keysPerRule: settings.topKeys, maxRules: settings.topRules, values: settings.topValues });
  const limiter = new RateLimiter({
    requestLimits,
    store,
    clock,
    config: () => holder.config,
    keyPrefix: settings.cacheKeyPrefix,
    keyFormat: settings.backend === 'redis' ? settings.redisKeyFormat : settings.backend === 'memcached' ? settings.memcacheKeyFormat : 'native',
    headers: {
      mode: settings.rateLimitHeaders,
      xRateLimit: settings.xRateLimitHeaders,
      retryAfter: settings.retryAfterHeader,
      ...(settings.limitResponseHeadersEnabled
        ? { reference: { limit: settings.limitLimitHeader, remaining: settings.limitRemainingHeader, reset: settings.limitResetHeader } }
        : {}),
    },
    nearLimitRatio: settings.nearLimitRatio,
    observer: withCostLog(
      withOversizedLog(
        withDecisionLog(withTopKeys(metrics.observer, top), log, settings.logLevel === 'debug' || settings.logLevel === 'trace'),
        throttledLog({ log: (message) => log.warn(message), clock, intervalMs: 10_000 }),
      ),
      (message) => log.warn(message),
    ),
    shadowMode: settings.shadowMode,
    quotaMode: settings.quotaMode,
    timer,
    criticalityKey: settings.criticalityKey,
    responseDynamicMetadata: settings.responseDynamicMetadata,
    delayMarginMs: () => margin.delayMs(),
  });

  const model = new ServiceHealth({
    store: () => store.health?.() ?? { healthy: store.isReady() },
    // Rules over xDS: not ready before the first set (unless FORCE_START_WITHOUT_INITIAL_CONFIG); with
    // HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, not serving while the rules in force hold no domain.
    rulesLoaded: () => (xds?.loaded() ?? true) && (!settings.healthyWithAtLeastOneConfigLoaded || holder.config.domains.size > 0),
  });
  const health = new HealthState(() => model.rlsServing(), { [STORE_HEALTH_SERVICE]: () => model.storeHealthy() });
  // Read when asked (probes, Check, scrapes); Watch calls are polled while open. Nothing ticks at rest.
  metrics.watchStoreReady(() => model.storeHealthy());
  return { requestLimits, limiter, margin, model, health, top };
}
