/**
 * The gRPC port: gRPC on node:http2 with a route table (lean/lean-server.ts). It serves ShouldRateLimit,
 * ext_authz Check (when given), grpc.health.v1, more unary methods by path (doorman.Capacity) and bidirectional
 * streams (RLQS) on one listener, with one decode, engine, error mapping, deadline handling and call metrics.
 * grpc-js is a client library here (the capacity client, the xDS client, `ratelimit query`); its server
 * credentials class carries TLS (tls-credentials.ts).
 */
import * as grpc from '@grpc/grpc-js';
import type { Clock } from '../../vocab/clock.js';
import type { RateLimiter } from '../../core/rate-limiter.js';
import type { RequestLimits } from '../../vocab/request-limits.js';
import { metricMethodName } from './call-timing.js';
import { CHECK_PATH, checkCall, type ExtAuthzServiceOptions } from '../ext-authz/ext-authz-service.js';
import { toGrpcError } from './grpc-errors.js';
import type { ConnectionGuard } from './guard/connection-guard.js';
import type { HealthState } from '../health/grpc-health.js';
import { GrpcStatusError } from './lean/grpc-wire.js';
import { addHealthRoutes } from '../health/health-routes.js';
import { startLeanServer } from './lean/lean-server.js';
import type { ConnectionAgeOptions } from './lean/connection-age.js';
import { leanRlsRoute, RLS_PATH } from '../rls/rls-route.js';
import { routeTable } from './lean/routes.js';
import type { DecisionTracer } from '../../core/decision-trace.js';
import type { BidiRoute } from './bidi/bidi-route.js';

const CHECK_NAME = metricMethodName(CHECK_PATH);

export interface TransportOptions {
  readonly host: string;
  readonly port: number;
  readonly limiter: RateLimiter;
  readonly clock: Clock;
  readonly health: HealthState;
  readonly requestLimits: RequestLimits;
  readonly deadlineMarginMs: () => number;
  readonly defaultTimeoutMs: number;
  /** The longest a decision waits, whatever deadline the caller sent (DECISION_MAX_WAIT_MS). */
  readonly maxWaitMs?: number;
  readonly credentials?: grpc.ServerCredentials;
  /** Mutual TLS: the subject alternative name client certificates must carry, and where refusals go. */
  readonly clientSan?: { readonly name: string; readonly onRefused: (reason: string) => void };
  readonly socketMode?: number;
  /** A call answered with an error status (from the route or engine): the cause and the status name. */
  readonly onError: (err: unknown, status: string) => void;
  readonly onFinished: (method: string, seconds: number) => void;
  readonly onLate: (method: string) => void;
  readonly onSendDelay: (ms: number) => void;
  readonly unseenWaitMs: () => number;
  /** Connection bounds of the gRPC port (docs/security.md); none when absent. */
  readonly connections?: {
    readonly guard: ConnectionGuard;
    readonly maxConcurrentStreams: number;
    readonly maxSessionMemoryMb: number;
    readonly maxConnectionAge?: ConnectionAgeOptions;
  };
  /** envoy.service.auth.v3.Authorization/Check; absent = not served. Its errors go to its own onError. */
  readonly authz?: ExtAuthzServiceOptions;
  /** Tracing on: ShouldRateLimit and Check calls are spans under the trace context of their headers. */
  readonly tracer?: DecisionTracer;
  /** More unary methods by path, bytes → bytes (doorman.Capacity, src/capacity/rpc.ts); errors go to onError. */
  readonly extraUnary?: ReadonlyMap<string, (request: Buffer) => Promise<Uint8Array>>;
  /** Where the extraUnary methods' errors go (default onError). */
  readonly extraOnError?: (err: unknown, status: string) => void;
  /** Bidirectional-streaming methods by path (the Rate Limit Quota Service, src/rlqs/). */
  readonly bidi?: ReadonlyMap<string, BidiRoute>;
}

export interface RunningTransport {
  readonly port: number;
  readonly address: string;
  close(graceMs: number): Promise<void>;
}

export function startTransport(o: TransportOptions): Promise<RunningTransport> {
  const common = {
    host: o.host,
    port: o.port,
    ...(o.connections ?? {}),
    ...(o.credentials === undefined ? {} : { credentials: o.credentials }),
    ...(o.clientSan === undefined ? {} : { clientSan: o.clientSan }),
    ...(o.socketMode === undefined ? {} : { socketMode: o.socketMode }),
  };
  const rls = {
    limiter: o.limiter,
    clock: o.clock,
    deadlineMarginMs: o.deadlineMarginMs,
    requestLimits: o.requestLimits,
    defaultTimeoutMs: o.defaultTimeoutMs,
    ...(o.maxWaitMs === undefined ? {} : { maxWaitMs: o.maxWaitMs }),
    ...(o.tracer === undefined ? {} : { tracer: o.tracer }),
  };
  const routes = routeTable();
  routes.unary.set(RLS_PATH, leanRlsRoute(rls));
  addHealthRoutes(routes, o.health);
  if (o.authz !== undefined) routes.unary.set(CHECK_PATH, checkCall(o.tracer === undefined ? o.authz : { ...o.authz, tracer: o.tracer }));
  for (const [path, route] of o.extraUnary ?? []) routes.unary.set(path, (bytes) => route(bytes));
  for (const [path, route] of o.bidi ?? []) routes.bidi.set(path, route);
  const extraNames = new Set([...(o.extraUnary?.keys() ?? [])].map(metricMethodName));
  const onError = (method: string): ((err: unknown, status: string) => void) =>
    method === CHECK_NAME ? (o.authz?.onError ?? o.onError) : extraNames.has(method) ? (o.extraOnError ?? o.onError) : o.onError;
  return startLeanServer({
    ...common,
    routes,
    hooks: {
      maxMessageBytes: o.requestLimits.maxMessageBytes,
      toStatus: toGrpcError,
      onFinished: (method, code, seconds, err) => {
        if (err !== undefined && !(err instanceof GrpcStatusError)) onError(method)(err, grpc.status[code] ?? String(code));
        if (method !== 'Watch') o.onFinished(method, seconds);
      },
      onLate: o.onLate,
      onSendDelay: o.onSendDelay,
      unseenWaitMs: o.unseenWaitMs,
    },
  });
}
