/**
 * envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit as a lean route: bytes → decode (with the
 * request limits, decode-request.ts) → engine → hand-written encoder → bytes. Errors become statuses through
 * one mapping (grpc-errors.ts, via the server's toStatus).
 */
import type { Clock } from '../../vocab/clock.js';
import type { RateLimiter } from '../../core/rate-limiter.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../vocab/request-limits.js';
import { decodeRateLimitRequest } from './decode-request.js';
import { encodeRateLimitResponse } from './encode-response.js';
import { decisionDeadline } from './rls-service.js';
import { framedRoute, type UnaryRoute } from '../grpc/lean/routes.js';
import { tracedCall } from '../grpc/traced-call.js';
import type { DecisionTracer } from '../../core/decision-trace.js';

export const RLS_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export interface LeanRlsOptions {
  readonly limiter: RateLimiter;
  readonly clock: Clock;
  readonly deadlineMarginMs: number | (() => number);
  readonly requestLimits?: RequestLimits;
  readonly defaultTimeoutMs: number;
  readonly maxWaitMs?: number;
  /** Tracing on: each call is a span under the trace context of its headers. */
  readonly tracer?: DecisionTracer;
}

/** The answer with its gRPC message header written in place (no framing copy in the call). */
function encodeFramed(decision: Parameters<typeof encodeRateLimitResponse>[0]): Buffer {
  return encodeRateLimitResponse(decision, 5);
}

export function leanRlsRoute(options: LeanRlsOptions): UnaryRoute {
  const limits = options.requestLimits ?? DEFAULT_REQUEST_LIMITS;
  const margin = options.deadlineMarginMs;
  const { limiter, clock, defaultTimeoutMs, maxWaitMs, tracer } = options;
  if (tracer !== undefined) {
    return framedRoute((bytes, deadlineMs, call) => {
      const trace = tracer.start('ShouldRateLimit', call.headers);
      return tracedCall(trace, () => {
        const request = decodeRateLimitRequest(bytes, limits);
        return limiter.decide(request, { deadlineMs: decisionDeadline(deadlineMs, margin, defaultTimeoutMs, clock, maxWaitMs), call, trace });
      }).then(encodeFramed);
    });
  }
  return framedRoute((bytes, deadlineMs, call) => {
    const request = decodeRateLimitRequest(bytes, limits); // throws synchronously: answered as a status
    // `call` itself, not call.signal: the signal is made only if the request waits for a delayed slot.
    return limiter.decide(request, { deadlineMs: decisionDeadline(deadlineMs, margin, defaultTimeoutMs, clock, maxWaitMs), call }).then(encodeFramed);
  });
}
