/** envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit: wire → engine → wire. */
import * as grpc from '@grpc/grpc-js';
import type { RateLimiter } from '../core/rate-limiter.js';
import { toGrpcError } from './grpc-errors.js';
import { requestFromWire, responseToWire, type WireRequest } from './wire.js';

export interface RlsServiceOptions {
  readonly limiter: RateLimiter;
  /** Answer this long before the caller's deadline. */
  readonly deadlineMarginMs: number;
  /** Store budget when the caller sent no deadline. */
  readonly defaultTimeoutMs: number;
  /** Every call answered with a gRPC error: the cause and the status name (e.g. UNAVAILABLE). */
  readonly onError?: (err: unknown, status: string) => void;
}

/** Epoch-ms by which the store must answer: the gRPC deadline (Envoy sends grpc-timeout) less a margin. */
export function deadlineOf(call: grpc.ServerUnaryCall<unknown, unknown>, marginMs: number, defaultTimeoutMs: number): number {
  const d = call.getDeadline();
  const ms = d instanceof Date ? d.getTime() : d;
  if (!Number.isFinite(ms)) return Date.now() + defaultTimeoutMs;
  return ms - marginMs;
}

export function rlsHandlers(options: RlsServiceOptions): grpc.UntypedServiceImplementation {
  const shouldRateLimit: grpc.handleUnaryCall<WireRequest, unknown> = (call, callback) => {
    const fail = (err: unknown) => {
      const e = toGrpcError(err);
      options.onError?.(err, grpc.status[e.code]);
      callback(e);
    };
    let request;
    try {
      request = requestFromWire(call.request);
    } catch (err) {
      fail(err);
      return;
    }
    options.limiter
      .decide(request, { deadlineMs: deadlineOf(call, options.deadlineMarginMs, options.defaultTimeoutMs) })
      .then(
        (decision) => callback(null, responseToWire(decision)),
        fail,
      );
  };
  return { ShouldRateLimit: shouldRateLimit };
}
