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
import { HealthState } from './server/health.js';
import { rlsHandlers } from './server/rls-service.js';
import type { Settings } from './settings.js';
import { buildStore } from './store-factory.js';

export interface RunningService {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly limiter: RateLimiter;
  readonly rules: RulesHolder;
  readonly metrics: Metrics;
  /** Graceful stop: NOT_SERVING, drain in-flight calls (SHUTDOWN_GRACE_MS), close servers and store. */
  close(): Promise<void>;
}

export class StartupError extends Error {
  constructor(message: string, readonly details: readonly string[] = []) {
    super(details.length > 0 ? `${message}\n  ${details.join('\n  ')}` : message);
    this.name = 'StartupError';
  }
}

export async function startService(settings: Settings, deps: { clock?: Clock; log?: Logger; metrics?: Metrics } = {}): Promise<RunningService> {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  const metrics = deps.metrics ?? createMetrics();

  const loadOptions = { mergeDomains: settings.mergeDomainConfig };
  const initial = await loadConfigDir(settings.configDir, loadOptions);
  if (!initial.ok) throw new StartupError(`rules in ${settings.configDir} are invalid`, initial.errors.map(String));

  const rules = new RulesHolder(initial.config, () => loadConfigDir(settings.configDir, loadOptions), (status, changed) => {
    metrics.configReloads.inc({ result: status.ok ? 'success' : 'failure' });
    metrics.configLastReloadSuccess.set(status.ok ? 1 : 0);
    metrics.configDomains.set(rules.config.domains.size);
    if (!status.ok) log.error('rules reload failed; keeping the last good rules', { errors: status.errors, version: status.version });
    else if (changed) log.info('rules reloaded', { version: status.version, domains: [...rules.config.domains.keys()] });
  });
  metrics.configLastReloadSuccess.set(1);
  metrics.configDomains.set(initial.config.domains.size);

  const store = await buildStore(settings, { clock, log, metrics });
  const limiter = new RateLimiter({
    store,
    clock,
    config: () => rules.config,
    keyPrefix: settings.cacheKeyPrefix,
    headers: { mode: settings.rateLimitHeaders, xRateLimit: settings.xRateLimitHeaders },
    nearLimitRatio: settings.nearLimitRatio,
    observer: metrics.observer,
  });

  const ready = () => store.isReady();
  const health = new HealthState(ready);
  const healthTimer = setInterval(() => {
    health.refresh();
    metrics.storeReady.set(store.isReady() ? 1 : 0);
  }, 500);
  healthTimer.unref();

  const onError = (err: unknown) => log.warn('request failed', { error: err instanceof Error ? err.message : String(err) });
  const grpcServer = await startGrpcServer({
    host: settings.grpcHost,
    port: settings.grpcPort,
    rls: rlsHandlers({ limiter, deadlineMarginMs: settings.deadlineMarginMs, defaultTimeoutMs: settings.redisCommandTimeoutMs, onError }),
    health,
  });
  const admin = await startAdminServer({
    host: settings.httpHost,
    port: settings.httpPort,
    limiter,
    registry: metrics.registry,
    ready: () => health.status() === 'SERVING',
    rules: () => rules.describe(),
    onError,
  });

  const watcher = settings.configWatch
    ? watchConfigDir(settings.configDir, {
        debounceMs: settings.configDebounceMs,
        pollIntervalMs: settings.configPollIntervalMs,
        onChange: () => void rules.reload(),
        onError: (err: unknown) => log.warn('rules watcher error', { error: String(err) }),
      })
    : undefined;

  log.info('ratelimit-sidecar started', {
    grpc: `${settings.grpcHost}:${grpcServer.port}`,
    http: `${settings.httpHost}:${admin.port}`,
    backend: settings.backend,
    rules: settings.configDir,
    domains: [...initial.config.domains.keys()],
  });

  let closing: Promise<void> | undefined;
  return {
    grpcPort: grpcServer.port,
    httpPort: admin.port,
    limiter,
    rules,
    metrics,
    close: () =>
      (closing ??= (async () => {
        clearInterval(healthTimer);
        health.shutdown();
        watcher?.close();
        await grpcServer.close(settings.shutdownGraceMs);
        await admin.close();
        await store.close();
        log.info('ratelimit-sidecar stopped');
      })()),
  };
}
