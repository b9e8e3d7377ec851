/**
 * The composition root (style.md #2): settings → logger, metrics → store → rules → engine → servers.
 * Only this module (and cli.ts, which calls it) reads settings; everything else takes options objects.
 */
import { systemClock, type Clock } from './core/clock.js';
import { RateLimiter } from './core/rate-limiter.js';
import { loadConfigDir, watchConfigDir } from './config/index.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { RulesHolder } from './reloader.js';
import { startAdminServer } from './server/admin-http.js';
import { startGrpcServer } from './server/grpc-server.js';
import { HealthState, STORE_HEALTH_SERVICE } from './server/health.js';
import { ServiceHealth } from './server/service-health.js';
import { rlsHandlers } from './server/rls-service.js';
import { callTimingInterceptor } from './server/call-timing.js';
import { DeadlineMargin } from './server/deadline-margin.js';
import type { RequestLimits } from './core/request-limits.js';
import type { Settings } from './settings.js';
import { StartupError } from './startup-error.js';
import { buildStore } from './store-factory.js';

export { StartupError };

export interface RunningService {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly limiter: RateLimiter;
  readonly rules: RulesHolder;
  readonly metrics: Metrics;
  /** canAnswer(), storeHealthy(), storeProblem(), ready(): what /healthcheck, /readyz and gRPC health report. */
  readonly health: ServiceHealth;
  /** Graceful stop: NOT_SERVING, drain in-flight calls (SHUTDOWN_GRACE_MS), close servers and store. */
  close(): Promise<void>;
}

export async function startService(settings: Settings, deps: { clock?: Clock; log?: Logger; metrics?: Metrics } = {}): Promise<RunningService> {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  const metrics = deps.metrics ?? createMetrics();

  const loadOptions = { mergeDomains: settings.mergeDomainConfig };
  const late: { rules?: RulesHolder } = {}; // set once the first load succeeded
  // The watcher starts before the first load: its baseline then predates what we load, so no change
  // made while we start up can be missed (at worst it causes one extra, identical reload).
  const watcher = settings.configWatch
    ? watchConfigDir(settings.configDir, {
        debounceMs: settings.configDebounceMs,
        pollIntervalMs: settings.configPollIntervalMs,
        onChange: () => void late.rules?.reload(),
        onError: (err: unknown) => log.warn('rules watcher error', { error: String(err) }),
      })
    : undefined;
  const initial = await loadConfigDir(settings.configDir, loadOptions);
  if (!initial.ok) {
    watcher?.close();
    throw new StartupError(`rules in ${settings.configDir} are invalid`, initial.errors.map(String));
  }

  const holder = new RulesHolder(initial.config, () => loadConfigDir(settings.configDir, loadOptions), (status, changed) => {
    metrics.configReloads.inc({ result: status.ok ? 'success' : 'failure' });
    metrics.configLastReloadSuccess.set(status.ok ? 1 : 0);
    metrics.configDomains.set(holder.config.domains.size);
    if (!status.ok) log.error('rules reload failed; keeping the last good rules', { errors: status.errors, version: status.version });
    else if (changed) log.info('rules reloaded', { version: status.version, domains: [...holder.config.domains.keys()] });
    if (status.ok && changed && status.warnings.length > 0) log.warn('rules have ignored keys', { warnings: status.warnings });
  }, initial.warnings);
  if (initial.warnings.length > 0) log.warn('rules have ignored keys', { warnings: initial.warnings.map(String) });
  late.rules = holder;
  metrics.configLastReloadSuccess.set(1);
  metrics.configDomains.set(initial.config.domains.size);

  const store = await buildStore(settings, { clock, log, metrics }).catch((err: unknown) => {
    watcher?.close();
    throw err;
  });
  const requestLimits: RequestLimits = {
    maxMessageBytes: settings.maxRequestBytes,
    maxDescriptors: settings.maxRequestDescriptors,
    maxEntries: settings.maxDescriptorEntries,
    maxKeyBytes: settings.maxKeyBytes,
    maxValueBytes: settings.maxValueBytes,
    maxHitsAddend: settings.maxHitsAddend,
  };
  const limiter = new RateLimiter({
    requestLimits,
    store,
    clock,
    config: () => holder.config,
    keyPrefix: settings.cacheKeyPrefix,
    headers: { mode: settings.rateLimitHeaders, xRateLimit: settings.xRateLimitHeaders },
    nearLimitRatio: settings.nearLimitRatio,
    observer: metrics.observer,
  });

  // One health model for every surface (server/service-health.ts): the store's own state (connected AND
  // deciding) and whether the failure mode can still answer (store.isReady(): false only when closed).
  const model = new ServiceHealth({
    store: () => store.health?.() ?? { healthy: store.isReady() },
    storeCanAnswer: () => store.isReady(),
  });
  const health = new HealthState(() => model.rlsServing(), { [STORE_HEALTH_SERVICE]: () => model.storeHealthy() });
  const refreshHealth = () => {
    health.refresh();
    metrics.storeReady.set(model.storeHealthy() ? 1 : 0);
  };
  refreshHealth();
  const healthTimer = setInterval(refreshHealth, 500);
  healthTimer.unref();

  const onError = (err: unknown) => log.warn('request failed', { error: err instanceof Error ? err.message : String(err) });
  const onGrpcError = (err: unknown, status: string) => {
    metrics.grpcErrors.inc({ code: status });
    if (status !== 'INVALID_ARGUMENT') onError(err);
  };
  const margin = new DeadlineMargin({ floorMs: settings.deadlineMarginMs }).start();
  metrics.watchDeadlineMargin(() => margin.currentMs());
  const timing = callTimingInterceptor({
    onFinished: (method, seconds) => metrics.grpcRequestDuration.observe({ method }, seconds),
    onLate: (method) => metrics.grpcLateAnswers.inc({ method }),
    onSendDelay: (ms) => margin.recordSend(ms),
  });
  let grpcServer: Awaited<ReturnType<typeof startGrpcServer>> | undefined;
  let admin: Awaited<ReturnType<typeof startAdminServer>>;
  try {
    grpcServer = await startGrpcServer({
      host: settings.grpcHost,
      port: settings.grpcPort,
      rls: rlsHandlers({ limiter, clock, deadlineMarginMs: () => margin.currentMs(), requestLimits, defaultTimeoutMs: settings.redisCommandTimeoutMs, onError: onGrpcError }),
      health,
      serverOptions: { 'grpc.max_receive_message_length': settings.maxRequestBytes, interceptors: [timing] },
    }).catch((err: unknown) => {
      throw new StartupError(`cannot listen for gRPC on ${settings.grpcHost}:${settings.grpcPort}: ${(err as Error).message}`);
    });
    admin = await startAdminServer({
      host: settings.httpHost,
      port: settings.httpPort,
      limiter,
      requestLimits,
      registry: metrics.registry,
      ready: () => model.ready(),
      rules: () => holder.describe(),
      onError,
    }).catch((err: unknown) => {
      throw new StartupError(`cannot listen for HTTP on ${settings.httpHost}:${settings.httpPort}: ${(err as Error).message}`);
    });
  } catch (err) {
    watcher?.close();
    margin.stop();
    clearInterval(healthTimer);
    await grpcServer?.close(0);
    await store.close();
    throw err;
  }
  const grpc = grpcServer;
  model.setGrpcServing(true);
  refreshHealth();


  log.info('ratelimit-sidecar started', {
    grpc: `${settings.grpcHost}:${grpc.port}`,
    http: `${settings.httpHost}:${admin.port}`,
    backend: settings.backend,
    rules: settings.configDir,
    domains: [...initial.config.domains.keys()],
  });

  let closing: Promise<void> | undefined;
  return {
    grpcPort: grpc.port,
    httpPort: admin.port,
    limiter,
    rules: holder,
    metrics,
    health: model,
    close: () =>
      (closing ??= (async () => {
        clearInterval(healthTimer);
        margin.stop();
        model.startDraining();
        health.shutdown();
        watcher?.close();
        await grpc.close(settings.shutdownGraceMs);
        await admin.close();
        await store.close();
        log.info('ratelimit-sidecar stopped');
      })()),
  };
}
