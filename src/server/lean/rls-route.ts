/**
 * envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit as a lean route: bytes → decode (with the
 * request limits, decode-request.ts) → engine → hand-written encoder → bytes. Errors become statuses through
 * the same mapping as grpc-js (grpc-errors.ts, via the server's toStatus).
 */
import type { Clock } from '../../core/clock.js';
import type { RateLimiter } from '../../core/rate-limiter.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../core/request-limits.js';
import { decodeRateLimitRequest } from '../decode-request.js';
import { encodeRateLimitResponse } from '../encode-response.js';
import { decisionDeadline } from '../rls-service.js';
import type { UnaryRoute } from './routes.js';

export const RLS_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export interface LeanRlsOptions {
  readonly limiter: RateLimiter;
  readonly clock: Clock;
  readonly deadlineMarginMs: number | (() => number);
  readonly requestLimits?: RequestLimits;
  readonly defaultTimeoutMs: number;
  readonly maxWaitMs?: number;
}

export function leanRlsRoute(options: LeanRlsOptions): UnaryRoute {
  const limits = options.requestLimits ?? DEFAULT_REQUEST_LIMITS;
  const margin = options.deadlineMarginMs;
  const { limiter, clock, defaultTimeoutMs, maxWaitMs } = options;
  return (bytes, deadlineMs) => {
    const request = decodeRateLimitRequest(bytes, limits); // throws synchronously: answered as a status
    return limiter.decide(request, { deadlineMs: decisionDeadline(deadlineMs, margin, defaultTimeoutMs, clock, maxWaitMs) }).then(encodeRateLimitResponse);
  };
}
