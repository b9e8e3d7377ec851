/**
 * Start phase: the servers. The quota service's streams, the gRPC port (behind its connection guard) with what
 * it serves, the admin HTTP server, and the listeners settings switch on. The gRPC server closes with the
 * grace `graceMs()` gives when its turn comes (0 when the start failed).
 */
import { startAdminServer } from '../server/http/admin-http.js';
import { renderStatusPage, type StatusPageData } from '../server/http/status-page.js';
import { VERSION } from './version.js';
import type { Listener } from '../server/http/debug-http.js';
import { ConnectionGuard } from '../server/grpc/guard/connection-guard.js';
import { LoopClock } from '../server/grpc/loop-clock.js';
import type { RunningTransport } from '../server/grpc/transport.js';
import { componentLogger } from '../observability/log.js';
import { setUpRlqs } from '../rlqs/rlqs-setup.js';
import { startExtraListeners } from './listeners.js';
import type { StartContext } from './start-context.js';
import type { StartedEngine } from './start-engine.js';
import { startGrpc } from './start-grpc.js';
import { startTracing } from './start-tracing.js';
import type { StartedRules } from './start-rules.js';
import { startServices, type StartedServices } from './start-services.js';
import type { StartedStore } from './start-store.js';
import { StartupError } from '../vocab/startup-error.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { BoundedLimit } from '../top/top-keys.js';

export interface StartedServers extends StartedServices {
  readonly grpc: RunningTransport;
  readonly adminPort: number;
  readonly extra: readonly Listener[];
  /** Ends the quota streams, then closes the gRPC port: new calls refused, in-flight ones finished within the grace. */
  readonly stopGrpc: () => Promise<void>;
}

export async function startServers(
  ctx: StartContext,
  rules: StartedRules,
  { counterRedis }: StartedStore,
  engine: StartedEngine,
  graceMs: () => number,
): Promise<StartedServers> {
  const { settings, log, metrics, teardown } = ctx;
  const { holder } = rules;
  const { model, health, margin, top } = engine;
  const tracer = await startTracing(ctx);
  // The Rate Limit Quota Service (src/rlqs/), served beside RateLimitService on the gRPC port.
  const rlqsLog = componentLogger(log, 'rlqs');
  const rlqs = setUpRlqs({
    config: () => holder.config,
    shadowMode: settings.shadowMode,
    ttlS: settings.rlqsAssignmentTtlS,
    idleAbandonS: settings.rlqsIdleAbandonS,
    ...(counterRedis === undefined ? {} : { redis: { client: counterRedis.connection, keyPrefix: settings.cacheKeyPrefix } }),
    metrics,
    log: (message, fields) => rlqsLog.warn(message, fields),
  });
  const stopRlqs = teardown.defer('quota streams', () => rlqs.close());

  const onError = (err: unknown) => log.warn('request failed', { error: err });
  const grpcErrorsOf = (protocol: string) => (err: unknown, status: string) => {
    metrics.grpcErrors.inc({ code: status });
    // The reference counts a failed ShouldRateLimit as service_error (its store's failures are redis_error, counted where the store fails).
    if (protocol === 'rls' && status !== 'UNAVAILABLE') metrics.reference?.onShouldRateLimitError('service_error');
    if (status !== 'INVALID_ARGUMENT') log.warn('request failed', { error: err, protocol });
  };
  const loopClock = new LoopClock().start();
  teardown.defer('loop clock', () => loopClock.stop());
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

  const services = await startServices(ctx, rules, engine);
  const grpc = await startGrpc(ctx, engine, services, { loopClock, guard, rlqs, onError: grpcErrorsOf, ...(tracer === undefined ? {} : { tracer }) });
  const closeGrpc = teardown.defer('gRPC server', () => grpc.close(graceMs()));
  const { capacity } = services;
  const admin = await startAdminServer({
    host: settings.httpHost,
    port: settings.httpPort,
    limiter: engine.limiter,
    requestLimits: engine.requestLimits,
    registry: metrics.registry,
    ready: () => model.ready(),
    canAnswer: settings.redisHealthCheckActiveConnection ? () => model.ready().ready : () => model.canAnswer(),
    rules: () => holder.describe(),
    ...(top === undefined ? {} : { top: (domain: string | undefined) => ({ ...top.snapshot(domain), max_values: boundedLimits(engine.limiter, domain) }) }),
    statusPage: () =>
      renderStatusPage({
        version: VERSION,
        now: new Date(ctx.clock.nowMs()),
        refreshSeconds: 10,
        store: { backend: settings.backend, healthy: model.storeHealthy(), problem: model.storeProblem() },
        readiness: model.ready(),
        rules: holder.describe() as StatusPageData['rules'],
        top: top === undefined ? undefined : { ...top.snapshot(), max_values: boundedLimits(engine.limiter, undefined) },
        ...(rlqsInUse(rlqs.describe()) ? { rlqs: rlqs.describe() } : {}),
        ...(capacity === undefined ? {} : { capacity: capacity.describe() }),
      }),
    ...(capacity === undefined ? {} : { capacity: capacity.describe.bind(capacity) }),
    rlqs: () => rlqs.describe(),
    jsonApi: settings.jsonApi,
    ...(tracer === undefined ? {} : { tracer }),
    onError,
  }).catch((err: unknown) => {
    throw new StartupError(`cannot listen for HTTP on ${settings.httpHost}:${settings.httpPort}: ${(err as Error).message}`);
  });
  teardown.defer('admin HTTP server', () => admin.close());
  const extra = await startExtraListeners(settings, metrics, holder, onError);
  teardown.defer('extra listeners', async () => void (await Promise.all(extra.map((l) => l.close()))));
  const stopGrpc = async () => {
    await stopRlqs();
    await closeGrpc();
  };
  return { ...services, grpc, adminPort: admin.port, extra, stopGrpc };
}

/** The quota service shows on the status page once an Envoy opened a stream or a bucket is tracked. */
function rlqsInUse(described: object): boolean {
  const d = described as { streams?: number; tracked?: number };
  return (d.streams ?? 0) > 0 || (d.tracked ?? 0) > 0;
}

/** The limits with `max_values` and their current window, as /top shows them (snake_case, as the rest of /top). */
function boundedLimits(limiter: RateLimiter, domain: string | undefined): BoundedLimit[] {
  return limiter
    .valueGuardStates()
    .filter((g) => domain === undefined || g.domain === domain)
    .map((g) => ({
      domain: g.domain,
      rule: g.rule,
      max_values: g.maxValues,
      on_max_values: g.onMaxValues,
      tracked: g.tracked,
      past_bound: g.pastBound,
      window_start: new Date(g.windowStartMs).toISOString(),
    }));
}
