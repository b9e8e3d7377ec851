/**
 * The composition root, in phases: settings → logger, metrics → rules → store → engine → servers (with the
 * services the gRPC port carries), each in a file of its own (start-*.ts). Every phase registers on one
 * teardown stack how to stop what it starts; a failed start closes what had started, newest first; a
 * graceful stop drains, ends the serving, then closes the rest. Only this module (and cli.ts, which calls
 * it) reads settings; everything else takes options objects.
 */
import { systemClock, type Clock } from '../vocab/clock.js';
import type { Timer } from '../vocab/timer.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import { componentLogger, createLogger, type Logger } from '../observability/log.js';
import { createMetrics, type Metrics } from '../observability/metrics.js';
import type { RulesHolder } from './reloader.js';
import type { ServiceHealth } from '../server/health/service-health.js';
import type { Notice, Settings } from '../settings/settings.js';
import { startReferenceStats } from './start-reference-stats.js';
import { StartupError } from '../vocab/startup-error.js';
import { VERSION } from './version.js';
import type { StartContext } from './start-context.js';
import { startRules, type StartedRules } from './start-rules.js';
import { startStore } from './start-store.js';
import { startEngine } from './start-engine.js';
import { startServers, type StartedServers } from './start-servers.js';
import { shutdown } from './shutdown.js';
import { Teardown } from './teardown.js';

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

export async function startService(
  settings: Settings,
  deps: { clock?: Clock; timer?: Timer; log?: Logger; metrics?: Metrics; notices?: readonly Notice[] } = {},
): Promise<RunningService> {
  const clock = deps.clock ?? systemClock;
  const log = deps.log ?? createLogger({ level: settings.logLevel, format: settings.logFormat });
  const metrics = deps.metrics ?? createMetrics();
  metrics.setMaxDetailedSeries(settings.metricsMaxDetailedSeries);

  // envoyproxy/ratelimit settings that were set: each named, unsupported ones with what to do.
  const compatLog = componentLogger(log, 'settings');
  for (const n of deps.notices ?? []) compatLog[n.level](n.message, { setting: n.setting });

  const teardown = new Teardown((closing, error) => log.warn('closing failed', { closing, error }));
  const ctx: StartContext = { settings, clock, log, metrics, teardown };
  // The gRPC server finishes in-flight calls within SHUTDOWN_GRACE_MS once it has served; not after a failed start.
  let served = false;
  const { rules, stored, engine, servers } = await startPhases(ctx, deps.timer, () => (served ? settings.shutdownGraceMs : 0)).catch(async (err: unknown) => {
    await teardown.close().catch(() => {}); // each failure is logged as it happens
    throw err;
  });
  const { model, health } = engine;
  served = true;
  servers.capacity?.setAddress(servers.grpc.address);
  model.setGrpcServing(true);
  health.refresh();
  logStarted(settings, log, rules, servers);

  // Registered last, so first to run once the drain is over: what ends the serving.
  teardown.defer('serving', async () => {
    await rules.stopWatching();
    await stored.stopXds();
    log.info('drain over: refusing new connections, draining open ones', { graceMs: settings.shutdownGraceMs });
    await servers.stopGrpc();
  });
  return {
    grpcPort: servers.grpc.port,
    grpcAddress: servers.grpc.address,
    httpPort: servers.adminPort,
    limiter: engine.limiter,
    rules: rules.holder,
    metrics,
    health: model,
    close: shutdown({ settings, log, model, health, teardown }),
  };
}

/** The phases in order; each registers on ctx.teardown how to stop what it started. */
async function startPhases(ctx: StartContext, timer: Timer | undefined, graceMs: () => number) {
  await startReferenceStats(ctx);
  const rules = await startRules(ctx);
  const stored = await startStore(ctx, rules);
  const engine = startEngine(ctx, rules, stored, timer);
  const servers = await startServers(ctx, rules, stored, engine, graceMs);
  return { rules, stored, engine, servers };
}

function logStarted(
  settings: Settings,
  log: Logger,
  { initial: config, xds }: StartedRules,
  { grpc, adminPort, credentials, extra, extAuthz, capacity }: StartedServers,
): void {
  const described = config.describe() as ConfigDescription;
  log.info('ratelimit-sidecar started', {
    version: VERSION,
    grpc: grpc.address,
    http: `${settings.httpHost}:${adminPort}`,
    grpcTls: credentials === undefined ? 'off' : settings.grpcTlsClientCa ? 'mutual' : 'on',
    ...(extra.length > 0 ? { extraPorts: extra.map((l) => l.port) } : {}),
    backend: settings.backend,
    ...(settings.backend === 'redis' ? { failureMode: settings.failureMode, redisType: settings.redisType } : {}),
    shadowMode: settings.shadowMode,
    extAuthz: extAuthz.description,
    ...(capacity === undefined ? {} : { capacity: settings.capacityConfig }),
    rules: xds === undefined ? settings.configDir : `xDS ${settings.xdsServerUrl} (node ${settings.xdsNodeId})`,
    domains: [...config.domains.keys()],
    ruleCounts: { domains: described.length, rules: described.reduce((n, d) => n + d.rules.length, 0), files: config.files.length },
  });
}
