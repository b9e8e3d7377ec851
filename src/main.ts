/**
 * The composition root (style.md #2): settings → logger, metrics → store → rules → engine → servers.
 * Only this module (and cli.ts, which calls it) reads settings; everything else takes options objects.
 */
import { systemClock, type Clock } from './core/clock.js';
import { RateLimiter } from './core/rate-limiter.js';
import { loadConfigDir, watchConfigDir } from './config/index.js';
import type { ConfigDescription } from './config/describe.js';
import { componentLogger, createLogger, type Logger } from './log.js';
import { createMetrics, type Metrics } from './metrics.js';
import { RulesHolder } from './reloader.js';
import { startAdminServer } from './server/admin-http.js';
import { parseListenAddr, startDebugServer, startMetricsServer, type Listener } from './server/debug-http.js';
import { startGrpcServer } from './server/grpc-server.js';
import { HealthState } from './server/health.js';
import { rlsHandlers } from './server/rls-service.js';
import type { Notice, Settings } from './settings.js';
import { StartupError } from './startup-error.js';
import { buildStore } from './store-factory.js';
import { VERSION } from './version.js';

export { StartupError };

export interface RunningService {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly limiter: RateLimiter;
  readonly rules: RulesHolder;
  readonly metrics: Metrics;
  /** Graceful stop: NOT_SERVING, drain in-flight calls (SHUTDOWN_GRACE_MS), close servers and store. */
  close(): Promise<void>;
}

export async function startService(settings: Settings, deps: { clock?: Clock; log?: Logger; metrics?: Metrics; notices?: readonly Notice[] } = {}): Promise<RunningService> {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  const metrics = deps.metrics ?? createMetrics();
  // envoyproxy/ratelimit settings that were set: each named, unsupported ones with what to do.
  const compatLog = componentLogger(log, 'settings');
  for (const n of deps.notices ?? []) compatLog[n.level](n.message, { setting: n.setting });

  const loadOptions = { mergeDomains: settings.mergeDomainConfig, allFiles: settings.configAllFiles };
  const late: { rules?: RulesHolder } = {}; // set once the first load succeeded
  // The watcher starts before the first load: its baseline then predates what we load, so no change
  // made while we start up can be missed (at worst it causes one extra, identical reload).
  const watcher = settings.configWatch
    ? watchConfigDir(settings.configDir, {
        allFiles: settings.configAllFiles,
        debounceMs: settings.configDebounceMs,
        pollIntervalMs: settings.configPollIntervalMs,
        onChange: () => void late.rules?.reload(),
        onError: (err: unknown) => log.warn('rules watcher error', { error: err }),
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

  const store = await buildStore(settings, { clock, log: componentLogger(log, 'store'), metrics }).catch((err: unknown) => {
    watcher?.close();
    throw err;
  });
  const limiter = new RateLimiter({
    store,
    clock,
    config: () => holder.config,
    keyPrefix: settings.cacheKeyPrefix,
    headers: {
      mode: settings.rateLimitHeaders,
      xRateLimit: settings.xRateLimitHeaders,
      ...(settings.limitResponseHeadersEnabled ? { reference: { limit: settings.limitLimitHeader, remaining: settings.limitRemainingHeader, reset: settings.limitResetHeader } } : {}),
    },
    nearLimitRatio: settings.nearLimitRatio,
    observer: metrics.observer,
    shadowMode: settings.shadowMode,
  });

  const ready = () => store.isReady();
  const health = new HealthState(ready);
  // The one seam for "can this replica answer now?" (/healthcheck, /readyz): switch it to the store's
  // health model when that lands.
  const canAnswer = () => health.status() === 'SERVING';
  const healthTimer = setInterval(() => {
    health.refresh();
    metrics.storeReady.set(store.isReady() ? 1 : 0);
  }, 500);
  healthTimer.unref();

  const onError = (err: unknown) => log.warn('request failed', { error: err });
  const onGrpcError = (err: unknown, status: string) => {
    metrics.grpcErrors.inc({ code: status });
    if (status !== 'INVALID_ARGUMENT') onError(err);
  };
  let grpcServer: Awaited<ReturnType<typeof startGrpcServer>> | undefined;
  let admin: Awaited<ReturnType<typeof startAdminServer>> | undefined;
  const extra: Listener[] = [];
  try {
    grpcServer = await startGrpcServer({
      host: settings.grpcHost,
      port: settings.grpcPort,
      rls: rlsHandlers({ limiter, clock, deadlineMarginMs: settings.deadlineMarginMs, defaultTimeoutMs: settings.redisCommandTimeoutMs, onError: onGrpcError }),
      health,
    }).catch((err: unknown) => {
      throw new StartupError(`cannot listen for gRPC on ${settings.grpcHost}:${settings.grpcPort}: ${(err as Error).message}`);
    });
    admin = await startAdminServer({
      host: settings.httpHost,
      port: settings.httpPort,
      limiter,
      registry: metrics.registry,
      ready: canAnswer,
      canAnswer,
      rules: () => holder.describe(),
      onError,
    }).catch((err: unknown) => {
      throw new StartupError(`cannot listen for HTTP on ${settings.httpHost}:${settings.httpPort}: ${(err as Error).message}`);
    });
    extra.push(...(await startExtraListeners(settings, metrics, holder, onError)));
  } catch (err) {
    watcher?.close();
    clearInterval(healthTimer);
    await Promise.all(extra.map((l) => l.close()));
    await admin?.close();
    await grpcServer?.close(0);
    await store.close();
    throw err;
  }
  const grpc = grpcServer;


  const described = initial.config.describe() as ConfigDescription;
  log.info('ratelimit-sidecar started', {
    version: VERSION,
    grpc: `${settings.grpcHost}:${grpc.port}`,
    http: `${settings.httpHost}:${admin.port}`,
    ...(extra.length > 0 ? { extraPorts: extra.map((l) => l.port) } : {}),
    backend: settings.backend,
    ...(settings.backend === 'redis' ? { failureMode: settings.failureMode, redisType: settings.redisType } : {}),
    shadowMode: settings.shadowMode,
    rules: settings.configDir,
    domains: [...initial.config.domains.keys()],
    ruleCounts: { domains: described.length, rules: described.reduce((n, d) => n + d.rules.length, 0), files: initial.config.files.length },
  });

  let closing: Promise<void> | undefined;
  return {
    grpcPort: grpc.port,
    httpPort: admin.port,
    limiter,
    rules: holder,
    metrics,
    close: () =>
      (closing ??= (async () => {
        clearInterval(healthTimer);
        health.shutdown();
        watcher?.close();
        await grpc.close(settings.shutdownGraceMs);
        await admin.close();
        await Promise.all(extra.map((l) => l.close()));
        await store.close();
        log.info('ratelimit-sidecar stopped');
      })()),
  };
}

/** DEBUG_PORT (/rlconfig, /stats, /rules) and USE_PROMETHEUS (metrics on PROMETHEUS_ADDR), when asked for. */
async function startExtraListeners(settings: Settings, metrics: Metrics, holder: RulesHolder, onError: (err: unknown) => void): Promise<Listener[]> {
  const out: Listener[] = [];
  try {
    if (settings.debugPort !== undefined) {
      const { debugHost: host, debugPort: port } = settings;
      out.push(await startDebugServer({ host, port, registry: metrics.registry, domains: () => holder.config.describe() as ConfigDescription, rules: () => holder.describe(), onError }).catch((err: unknown) => {
        throw new StartupError(`cannot listen for DEBUG_PORT on ${host}:${port}: ${(err as Error).message}`);
      }));
    }
    if (settings.usePrometheus) {
      const { host, port } = parseListenAddr(settings.prometheusAddr);
      out.push(await startMetricsServer({ host, port, path: settings.prometheusPath, registry: metrics.registry, onError }).catch((err: unknown) => {
        throw new StartupError(`cannot listen for PROMETHEUS_ADDR on ${settings.prometheusAddr}: ${(err as Error).message}`);
      }));
    }
  } catch (err) {
    await Promise.all(out.map((l) => l.close()));
    throw err;
  }
  return out;
}
