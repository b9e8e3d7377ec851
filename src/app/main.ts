/**
 * The composition root (style.md #2): settings → logger, metrics → store → rules → engine → servers.
 * Only this module (and cli.ts, which calls it) reads settings; everything else takes options objects.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { clockTimer, type Timer } from '../core/timer.js';
import { RateLimiter } from '../core/rate-limiter.js';
import { withOversizedLog } from '../core/observer.js';
import { throttledLog } from '../storage/throttled-log.js';
import { loadConfigDir, loadConfigDirInWorker, watchConfigDir } from '../config/index.js';
import { configDirProblem } from '../config/loader.js';
import type { ConfigDescription } from '../config/describe.js';
import { componentLogger, createLogger, type Logger } from '../observability/log.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import { rulesSnapshot } from '../observability/metrics-labels.js';
import { RulesHolder } from './reloader.js';
import { startAdminServer } from '../server/admin-http.js';
import type { Listener } from '../server/debug-http.js';
import { startTransport } from '../server/transport.js';
import { ConnectionGuard } from '../server/guard/connection-guard.js';
import type { ReloadingServerCredentials } from '../server/tls-credentials.js';
import { grpcCredentials, startExtraListeners } from './listeners.js';
import { HealthState, STORE_HEALTH_SERVICE } from '../server/health.js';
import { ServiceHealth } from '../server/service-health.js';
import { setUpExtAuthz, type ExtAuthzSetup } from './ext-authz-setup.js';
import { DeadlineMargin } from '../server/deadline-margin.js';
import { LoopClock } from '../server/loop-clock.js';
import type { RequestLimits } from '../core/request-limits.js';
import type { Notice, Settings } from '../settings/settings.js';
import { StartupError } from './startup-error.js';
import { buildStore, redisOptions } from './store-factory.js';
import { createRedisStore, type RedisStore } from '../storage/redis/redis-store.js';
import { leaseRulesHook } from '../lease/rules-hook.js';
import { capacityRules } from './capacity-rules-hook.js';
import type { CompiledConfig } from '../config/types.js';
import { VERSION } from './version.js';
import { setUpCapacity, type CapacitySetup } from '../capacity/setup.js';
import { xdsRules } from './xds-rules.js';
import { setUpRlqs } from '../rlqs/setup.js';

export { StartupError };

export interface RunningService {
  /** The TCP port of the gRPC server (0 on a Unix socket). */
  readonly grpcPort: number;
  /** What a client dials: `host:port` or `unix:/path`. */
  readonly grpcAddress: string;
  readonly httpPort: number;
  readonly limiter: RateLimiter;
  readonly rules: RulesHolder;
  readonly metrics: Metrics;
  /** canAnswer(), storeHealthy(), storeProblem(), ready(): what /healthcheck, /readyz and gRPC health report. */
  readonly health: ServiceHealth;
  /**
   * Graceful stop: NOT_SERVING at once (health Check/Watch, /readyz) while calls are still answered for
   * SHUTDOWN_DRAIN_MS (Envoy and Kubernetes notice and stop sending); then new calls are refused and in-flight
   * ones get SHUTDOWN_GRACE_MS to finish; then the admin server and the store close. Calling it again returns
   * the same promise; `{ now: true }` (a second signal) cuts a drain in progress short.
   */
  close(options?: { now?: boolean }): Promise<void>;
}

export async function startService(settings: Settings, deps: { clock?: Clock; timer?: Timer; log?: Logger; metrics?: Metrics; notices?: readonly Notice[] } = {}): Promise<RunningService> {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  const metrics = deps.metrics ?? createMetrics();
  metrics.setMaxDetailedSeries(settings.metricsMaxDetailedSeries);

  // envoyproxy/ratelimit settings that were set: each named, unsupported ones with what to do.
  const compatLog = componentLogger(log, 'settings');
  for (const n of deps.notices ?? []) compatLog[n.level](n.message, { setting: n.setting });

  // CONFIG_TYPE=GRPC_XDS_SOTW: the rules come from an xDS server (xds-rules.ts), CONFIG_DIR is not read.
  const xds = settings.configType === 'GRPC_XDS_SOTW' ? xdsRules(settings, componentLogger(log, 'xds'), metrics) : undefined;
  // A missing rules directory is one clear line, before the watcher would log its own failure with a stack.
  const dirProblem = xds === undefined ? await configDirProblem(settings.configDir) : undefined;
  if (dirProblem !== undefined) throw new StartupError(`cannot start: CONFIG_DIR ${dirProblem}`);

  // A capacity server (CAPACITY_CONFIG) may run without rate-limit rules; otherwise no rules file is an error.
  const loadOptions = { mergeDomains: settings.mergeDomainConfig, allFiles: settings.configAllFiles, maxFileBytes: settings.configMaxFileBytes, allowEmpty: settings.capacityConfig !== '' };
  const late: { rules?: RulesHolder; leases?: (config: CompiledConfig, initial: boolean) => Promise<void>; capacityLimits?: (config: CompiledConfig) => void } = {}; // set once the first load succeeded
  // The watcher starts before the first load: its baseline then predates what we load, so no change
  // made while we start up can be missed (at worst it causes one extra, identical reload).
  const watcher = settings.configWatch && xds === undefined
    ? watchConfigDir(settings.configDir, {
        allFiles: settings.configAllFiles,
        debounceMs: settings.configDebounceMs,
        pollIntervalMs: settings.configPollIntervalMs,
        maxFileBytes: settings.configMaxFileBytes,
        onChange: () => void late.rules?.reload(),
        onError: (err: unknown) => log.warn('rules watcher error', { error: err }),
      })
    : undefined;
  const initial = xds !== undefined ? { ok: true as const, config: xds.initial, warnings: [] } : await loadConfigDir(settings.configDir, loadOptions);
  if (!initial.ok) {
    watcher?.close();
    throw new StartupError(`rules in ${settings.configDir} are invalid`, initial.errors.map(String));
  }

  // Reloads parse and validate in a worker thread, so that no rules file can stall the requests being served.
  const reload = () => loadConfigDirInWorker(settings.configDir, { ...loadOptions, timeoutMs: settings.configLoadTimeoutMs });
  const holder = new RulesHolder(initial.config, reload, (status, changed) => {
    metrics.configReloads.inc({ result: status.ok ? 'success' : 'failure' });
    metrics.configLastReloadSuccess.set(status.ok ? 1 : 0);
    metrics.configLastReloadTime.set(clock.nowMs() / 1000);
    if (status.ok && changed) metrics.setRules(rulesSnapshot(holder.config));
    if (status.ok && changed) void late.leases?.(holder.config, false);
    if (status.ok && changed) late.capacityLimits?.(holder.config);
    if (!status.ok) log.error('rules reload failed; keeping the last good rules', { errors: status.errors, version: status.version });
    else if (changed) log.info('rules reloaded', { version: status.version, domains: [...holder.config.domains.keys()] });
    if (status.ok && changed && status.warnings.length > 0) log.warn('rules have ignored keys', { warnings: status.warnings });
  }, initial.warnings);
  if (initial.warnings.length > 0) log.warn('rules have ignored keys', { warnings: initial.warnings.map(String) });
  late.rules = holder;
  metrics.configLastReloadSuccess.set(1);
  metrics.configLastReloadTime.set(clock.nowMs() / 1000);
  metrics.setRules(rulesSnapshot(initial.config));

  let counterRedis: RedisStore | undefined;
  const stored = await buildStore(settings, { clock, log: componentLogger(log, 'store'), metrics, onRedis: (r) => (counterRedis = r) }).catch((err: unknown) => {
    watcher?.close();
    throw err;
  });
  late.leases = leaseRulesHook({ backend: settings.backend, store: stored, warn: (message, fields) => log.warn(message, fields) });
  // Limits with `capacity:` are decided in process from this replica's granted share (docs/capacity-client.md).
  const capacityLimits = capacityRules(stored, { servers: settings.capacityServer, clientId: settings.capacityClientId, clock, warn: (message, fields) => log.warn(message, fields) });
  const store = capacityLimits.store;
  late.capacityLimits = (config) => capacityLimits.onLoad(config);
  late.capacityLimits(holder.config);
  await late.leases(holder.config, true);
  await xds?.start(holder);
  const requestLimits: RequestLimits = {
    maxMessageBytes: settings.maxRequestBytes,
    maxDescriptors: settings.maxRequestDescriptors,
    maxEntries: settings.maxDescriptorEntries,
    maxKeyBytes: settings.maxKeyBytes,
    maxValueBytes: settings.maxValueBytes,
    maxHitsAddend: settings.maxHitsAddend,
  };
  // The engine's waits for delayed slots (on_limit delay), counted for /metrics.
  const timer = deps.timer ?? clockTimer(clock);
  metrics.watchDelayWaits(() => timer.pending);
  const margin = new DeadlineMargin({ floorMs: settings.deadlineMarginMs }).start();
  const limiter = new RateLimiter({
    requestLimits,
    store,
    clock,
    config: () => holder.config,
    keyPrefix: settings.cacheKeyPrefix,
    keyFormat: settings.backend === 'redis' ? settings.redisKeyFormat : 'native',
    headers: {
      mode: settings.rateLimitHeaders,
      xRateLimit: settings.xRateLimitHeaders,
      retryAfter: settings.retryAfterHeader,
      ...(settings.limitResponseHeadersEnabled ? { reference: { limit: settings.limitLimitHeader, remaining: settings.limitRemainingHeader, reset: settings.limitResetHeader } } : {}),
    },
    nearLimitRatio: settings.nearLimitRatio,
    observer: withOversizedLog(metrics.observer, throttledLog({ log: (message) => log.warn(message), clock, intervalMs: 10_000 })),
    shadowMode: settings.shadowMode,
    timer,
    criticalityKey: settings.criticalityKey,
    responseDynamicMetadata: settings.responseDynamicMetadata,
    delayMarginMs: () => margin.delayMs(),
  });

  // One health model for every surface (server/service-health.ts), fed by the store's own state
  // (connected AND deciding).
  const model = new ServiceHealth({
    store: () => store.health?.() ?? { healthy: store.isReady() },
    // Rules over xDS: not ready before the first set (unless FORCE_START_WITHOUT_INITIAL_CONFIG); with
    // HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED, not serving while the rules in force hold no domain.
    rulesLoaded: () => (xds?.loaded() ?? true) && (!settings.healthyWithAtLeastOneConfigLoaded || holder.config.domains.size > 0),
  });
  const health = new HealthState(() => model.rlsServing(), { [STORE_HEALTH_SERVICE]: () => model.storeHealthy() });
  const canAnswer = () => model.canAnswer();
  // Read when asked (probes, Check, scrapes); Watch calls are polled while open. Nothing ticks at rest.
  metrics.watchStoreReady(() => model.storeHealthy());

  // The Rate Limit Quota Service (src/rlqs/), served beside RateLimitService on the gRPC port.
  const rlqsLog = componentLogger(log, 'rlqs');
  const rlqs = setUpRlqs({ config: () => holder.config, shadowMode: settings.shadowMode, ttlS: settings.rlqsAssignmentTtlS, idleAbandonS: settings.rlqsIdleAbandonS, ...(counterRedis === undefined ? {} : { redis: { client: counterRedis.connection, keyPrefix: settings.cacheKeyPrefix } }), metrics, log: (message, fields) => rlqsLog.warn(message, fields) });

  const onError = (err: unknown) => log.warn('request failed', { error: err });
  const grpcErrorsOf = (protocol: string) => (err: unknown, status: string) => {
    metrics.grpcErrors.inc({ code: status });
    if (status !== 'INVALID_ARGUMENT') log.warn('request failed', { error: err, protocol });
  };
  const onGrpcError = grpcErrorsOf('rls');
  const loopClock = new LoopClock().start();
  metrics.watchDeadlineMargin(() => margin.currentMs());
  const guard = new ConnectionGuard({
    maxConnections: settings.grpcMaxConnections,
    messageTimeoutMs: settings.grpcMessageTimeoutMs,
    idleTimeoutMs: settings.grpcIdleTimeoutMs,
    resetBurst: settings.grpcResetBurst,
    resetRatePerS: settings.grpcResetRatePerS,
    refuseAddress: settings.grpcResetRefuseAddress,
    onAction: (action) => metrics.grpcGuard.inc({ action }),
    longLivedPaths: new Set([rlqs.path]),
  });
  health.limitWatches(settings.grpcMaxWatchStreams, () => metrics.grpcGuard.inc({ action: 'watch_refused' }));
  metrics.watchGrpcConnections(() => ({ connections: guard.connections, watches: health.watches }));
  let grpcServer: Awaited<ReturnType<typeof startTransport>> | undefined;
  let admin: Awaited<ReturnType<typeof startAdminServer>> | undefined;
  const extra: Listener[] = [];
  let credentials: ReloadingServerCredentials | undefined;
  let extAuthz: ExtAuthzSetup | undefined;
  let capacity: CapacitySetup | undefined;
  let capacityRedis: RedisStore | undefined;
  try {
    extAuthz = await setUpExtAuthz(settings, { limiter, config: () => holder.config, metrics, log });
    if (settings.capacityConfig !== '') {
      // BACKEND=redis: the capacity leases get their own connection (closed with the capacity service).
      capacityRedis = settings.backend === 'redis' ? createRedisStore(redisOptions(settings, clock, componentLogger(log, 'capacity'))) : undefined;
      capacity = await setUpCapacity(settings, { clock, log: componentLogger(log, 'capacity'), report: { ...metrics.capacityReport(), watch: (stats) => metrics.watchCapacity(stats), watchRedis: (stats) => metrics.watchCapacityRedis(stats) }, ...(capacityRedis === undefined ? {} : { redis: capacityRedis.connection }) });
    }
    credentials = await grpcCredentials(settings, log);
    grpcServer = await startTransport({
      host: settings.grpcHost,
      port: settings.grpcPort,
      limiter,
      clock,
      authz: {
        authorizer: extAuthz.authorizer,
        clock,
        deadlineMarginMs: () => margin.forCall() + loopClock.unseenWaitMs(),
        defaultTimeoutMs: settings.redisCommandTimeoutMs,
        maxWaitMs: settings.decisionMaxWaitMs,
        limits: { maxHeaders: settings.authzMaxHeaders },
        onError: grpcErrorsOf('ext_authz'),
      },
      health,
      ...(capacity === undefined ? {} : { extraUnary: capacity.routes, extraOnError: grpcErrorsOf('capacity') }),
      bidi: new Map([[rlqs.path, rlqs.route]]),
      requestLimits: capacity === undefined ? requestLimits : { ...requestLimits, maxMessageBytes: Math.max(requestLimits.maxMessageBytes, settings.capacityMaxRequestBytes) },
      deadlineMarginMs: () => margin.forCall() + loopClock.unseenWaitMs(),
      defaultTimeoutMs: settings.redisCommandTimeoutMs,
      maxWaitMs: settings.decisionMaxWaitMs,
      ...(credentials === undefined ? {} : { credentials }),
      socketMode: Number.parseInt(settings.grpcUnixSocketMode, 8),
      onError: onGrpcError,
      onFinished: (method, seconds) => metrics.grpcRequestDuration.observe({ method }, seconds),
      onLate: (method) => metrics.grpcLateAnswers.inc({ method }),
      onSendDelay: (ms) => margin.recordSend(ms),
      unseenWaitMs: () => loopClock.unseenWaitMs(),
      connections: { guard, maxConcurrentStreams: settings.grpcMaxStreamsPerConnection, maxSessionMemoryMb: settings.grpcMaxSessionMemoryMb },
    }).catch((err: unknown) => {
      const where = settings.grpcHost.startsWith('unix:') ? settings.grpcHost : `${settings.grpcHost}:${settings.grpcPort}`;
      throw new StartupError(`cannot listen for gRPC on ${where}: ${(err as Error).message}`);
    });
    const capacityDescribe = capacity === undefined ? undefined : capacity.describe.bind(capacity);
    admin = await startAdminServer({
      host: settings.httpHost,
      port: settings.httpPort,
      limiter,
      requestLimits,
      registry: metrics.registry,
      ready: () => model.ready(),
      canAnswer,
      rules: () => holder.describe(),
      ...(capacityDescribe === undefined ? {} : { capacity: capacityDescribe }),
      rlqs: () => rlqs.describe(),
      jsonApi: settings.jsonApi,
      onError,
    }).catch((err: unknown) => {
      throw new StartupError(`cannot listen for HTTP on ${settings.httpHost}:${settings.httpPort}: ${(err as Error).message}`);
    });
    extra.push(...(await startExtraListeners(settings, metrics, holder, onError)));
  } catch (err) {
    watcher?.close();
    xds?.stop();
    extAuthz?.close();
    capacity?.close();
    await capacityRedis?.close();
    rlqs.close();
    credentials?.close();
    margin.stop();
    loopClock.stop();
    await Promise.all(extra.map((l) => l.close()));
    await admin?.close();
    await grpcServer?.close(0);
    await store.close();
    throw err;
  }
  const grpc = grpcServer;
  capacity?.setAddress(grpc.address);
  model.setGrpcServing(true);
  health.refresh();

  const described = initial.config.describe() as ConfigDescription;
  log.info('ratelimit-sidecar started', {
    version: VERSION,
    grpc: grpc.address,
    http: `${settings.httpHost}:${admin.port}`,
    grpcTls: credentials === undefined ? 'off' : settings.grpcTlsClientCa ? 'mutual' : 'on',
    ...(extra.length > 0 ? { extraPorts: extra.map((l) => l.port) } : {}),
    backend: settings.backend,
    ...(settings.backend === 'redis' ? { failureMode: settings.failureMode, redisType: settings.redisType } : {}),
    shadowMode: settings.shadowMode,
    extAuthz: extAuthz.description,
    ...(capacity === undefined ? {} : { capacity: settings.capacityConfig }),
    rules: xds === undefined ? settings.configDir : `xDS ${settings.xdsServerUrl} (node ${settings.xdsNodeId})`,
    domains: [...initial.config.domains.keys()],
    ruleCounts: { domains: described.length, rules: described.reduce((n, d) => n + d.rules.length, 0), files: initial.config.files.length },
  });

  let closing: Promise<void> | undefined;
  let endDrain: (() => void) | undefined;
  const drain = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      endDrain = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  return {
    grpcPort: grpc.port,
    grpcAddress: grpc.address,
    httpPort: admin.port,
    limiter,
    rules: holder,
    metrics,
    health: model,
    close: (options = {}) => {
      if (options.now === true) endDrain?.();
      return (closing ??= (async () => {
        model.startDraining();
        health.shutdown();
        const drainMs = options.now === true ? 0 : settings.shutdownDrainMs;
        log.info('shutting down: NOT_SERVING, still answering during the drain', { drainMs, graceMs: settings.shutdownGraceMs });
        if (drainMs > 0) await drain(drainMs);
        watcher?.close();
        xds?.stop();
        log.info('drain over: refusing new calls, finishing in-flight ones', { graceMs: settings.shutdownGraceMs });
        rlqs.close();
        await grpc.close(settings.shutdownGraceMs);
        // Every call is answered now. What the answers read (the loop clock and margin that set each call's
        // deadline) ran until here, not just until the signal: a stopped loop clock reads the deadline of
        // every later call as spent.
        margin.stop();
        loopClock.stop();
        credentials?.close();
        extAuthz.close();
        capacity?.close();
        await capacityRedis?.close();
        await admin.close();
        await Promise.all(extra.map((l) => l.close()));
        await store.close();
        log.info('ratelimit-sidecar stopped');
      })());
    },
  };
}
