/**
 * The gRPC port: RateLimitService, ext_authz, health, RLQS's stream and (with CAPACITY_CONFIG) the capacity
 * service, on the transport GRPC_TRANSPORT names. A port that cannot be bound is a StartupError naming it.
 */
import type { DecisionTracer } from '../core/decision-trace.js';
import type { RlqsSetup } from '../rlqs/rlqs-setup.js';
import type { ConnectionGuard } from '../server/grpc/guard/connection-guard.js';
import type { LoopClock } from '../server/grpc/loop-clock.js';
import { startTransport, type RunningTransport } from '../server/grpc/transport.js';
import type { StartContext } from './start-context.js';
import type { StartedEngine } from './start-engine.js';
import type { StartedServices } from './start-services.js';
import { StartupError } from '../vocab/startup-error.js';
import { throttledLog } from '../storage/throttled-log.js';

export interface GrpcParts {
  readonly loopClock: LoopClock;
  readonly guard: ConnectionGuard;
  readonly rlqs: RlqsSetup;
  readonly onError: (protocol: string) => (err: unknown, status: string) => void;
  readonly tracer?: DecisionTracer;
}

/** A refused client certificate, once per 10 s per reason (a client that reconnects at once would flood the log). */
function refusedLog(log: (message: string) => void): (reason: string) => void {
  return (reason) => log(`gRPC connection closed: GRPC_TLS_CLIENT_SAN not matched: ${reason}`);
}

export function startGrpc(
  { settings, clock, metrics, log }: StartContext,
  { limiter, margin, health, requestLimits }: StartedEngine,
  { extAuthz, capacity, credentials }: StartedServices,
  parts: GrpcParts,
): Promise<RunningTransport> {
  const { loopClock, guard, rlqs, onError, tracer } = parts;
  return startTransport({
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
      onError: onError('ext_authz'),
    },
    health,
    ...(tracer === undefined ? {} : { tracer }),
    ...(capacity === undefined ? {} : { extraUnary: capacity.routes, extraOnError: onError('capacity') }),
    bidi: new Map([[rlqs.path, rlqs.route]]),
    requestLimits:
      capacity === undefined ? requestLimits : { ...requestLimits, maxMessageBytes: Math.max(requestLimits.maxMessageBytes, settings.capacityMaxRequestBytes) },
    deadlineMarginMs: () => margin.forCall() + loopClock.unseenWaitMs(),
    defaultTimeoutMs: settings.redisCommandTimeoutMs,
    maxWaitMs: settings.decisionMaxWaitMs,
    ...(credentials === undefined ? {} : { credentials }),
    ...(settings.grpcTlsClientSan === ''
      ? {}
      : { clientSan: { name: settings.grpcTlsClientSan, onRefused: refusedLog(throttledLog({ log: (m) => log.warn(m), clock })) } }),
    socketMode: Number.parseInt(settings.grpcUnixSocketMode, 8),
    onError: onError('rls'),
    onFinished: (method, seconds) => {
      metrics.grpcRequestDuration.observe({ method }, seconds);
      metrics.reference?.onCall(method, seconds);
    },
    onLate: (method) => metrics.grpcLateAnswers.inc({ method }),
    onSendDelay: (ms) => margin.recordSend(ms),
    unseenWaitMs: () => loopClock.unseenWaitMs(),
    connections: {
      guard,
      maxConcurrentStreams: settings.grpcMaxStreamsPerConnection,
      maxSessionMemoryMb: settings.grpcMaxSessionMemoryMb,
      maxConnectionAge: { ageMs: settings.grpcMaxConnectionAge, graceMs: settings.grpcMaxConnectionAgeGrace },
    },
  }).catch((err: unknown) => {
    const where = settings.grpcHost.startsWith('unix:') ? settings.grpcHost : `${settings.grpcHost}:${settings.grpcPort}`;
    throw new StartupError(`cannot listen for gRPC on ${where}: ${(err as Error).message}`);
  });
}
