/** envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit: wire → engine → wire. */
import * as grpc from '@grpc/grpc-js';
import type { Clock } from '../vocab/clock.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../vocab/request-limits.js';
import { decodeRateLimitRequest } from './decode-request.js';
import { toGrpcError } from './grpc-errors.js';
import { Code, GrpcStatusError } from './lean/grpc-wire.js';
import { encodeRateLimitResponse } from './encode-response.js';

export interface RlsServiceOptions {
  readonly limiter: RateLimiter;
  /** The engine's clock: deadlines are handed to the store in its time. */
  readonly clock: Clock;
  /** Answer this long before the caller's deadline: a number, or read per call (DeadlineMargin). */
  readonly deadlineMarginMs: number | (() => number);
  /** Bounds on one request (default DEFAULT_REQUEST_LIMITS); checked while decoding. */
  readonly requestLimits?: RequestLimits;
  /** Store budget when the caller sent no deadline. */
  readonly defaultTimeoutMs: number;
  /** The longest a decision waits, whatever deadline the caller sent (DECISION_MAX_WAIT_MS; default MAX_BUDGET_MS). */
  readonly maxWaitMs?: number;
  /** Every call answered with a gRPC error: the cause and the status name (e.g. UNAVAILABLE). */
  readonly onError?: (err: unknown, status: string) => void;
}

/** The default longest wait of a decision, whatever deadline the caller sent (DECISION_MAX_WAIT_MS). */
export const MAX_BUDGET_MS = 10_000;

/**
 * When the store must have answered, on the engine's clock: the time left before the gRPC deadline
 * (`deadlineMs`, wall-clock epoch ms as both transports give it; undefined when the caller sent no grpc-timeout)
 * less a margin, or the default budget when the caller set none, and never more than `maxWaitMs`. This one
 * deadline bounds the whole decision, Redis call included: no shorter per-command timeout may cut a call the
 * caller is still waiting for (it would be answered by FAILURE_MODE). Converting the budget, not the instant,
 * keeps an injected clock consistent.
 */
export function decisionDeadline(
  deadlineMs: number | undefined,
  margin: number | (() => number),
  defaultTimeoutMs: number,
  clock: Clock,
  maxWaitMs: number = MAX_BUDGET_MS,
): number {
  const budget = deadlineMs !== undefined ? deadlineMs - Date.now() - (typeof margin === 'number' ? margin : margin()) : defaultTimeoutMs;
  // A caller may send any grpc-timeout (hours); no decision is worth waiting for that long, and timers
  // past 2^31 ms would fire at once.
  return clock.nowMs() + Math.min(budget, maxWaitMs);
}

/**
 * A grpc-js call's end as an AbortSignal, made on first use (only a request that waits for a delayed slot
 * reads it): aborted when the call is cancelled, by its client (RST_STREAM) or by its deadline passing.
 */
export function callSignal(call: { readonly cancelled: boolean; once(event: 'cancelled', listener: () => void): unknown }): { readonly signal: AbortSignal } {
  let controller: AbortController | undefined;
  return {
    get signal() {
      if (controller === undefined) {
        const c = (controller = new AbortController());
        const abort = () => c.abort(new GrpcStatusError(Code.CANCELLED, 'call cancelled'));
        if (call.cancelled) abort();
        else call.once('cancelled', abort);
      }
      return controller.signal;
    },
  };
}

/** A grpc-js call's deadline as epoch ms, or undefined when the caller sent none. */
export function callDeadline(call: grpc.ServerUnaryCall<unknown, unknown>): number | undefined {
  const d = call.getDeadline();
  const at = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(at) ? at : undefined;
}

export function rlsHandlers(options: RlsServiceOptions): grpc.UntypedServiceImplementation {
  const limits = options.requestLimits ?? DEFAULT_REQUEST_LIMITS;
  const margin = options.deadlineMarginMs;
  // The request arrives as raw bytes (protos.ts rlsServer): decoding here turns malformed input into
  // INVALID_ARGUMENT and checks the request limits before any per-descriptor work.
  const shouldRateLimit: grpc.handleUnaryCall<Buffer, unknown> = (call, callback) => {
    const fail = (err: unknown) => {
      // Ended by its client or deadline (a delayed request's wait stops then): no one to answer, no error.
      if (call.cancelled) return;
      const e = toGrpcError(err);
      options.onError?.(err, grpc.status[e.code]);
      callback(e);
    };
    let request;
    try {
      request = decodeRateLimitRequest(call.request, limits);
    } catch (err) {
      fail(err);
      return;
    }
    options.limiter
      .decide(request, { deadlineMs: decisionDeadline(callDeadline(call), margin, options.defaultTimeoutMs, options.clock, options.maxWaitMs), call: callSignal(call) })
      .then(
        (decision) => callback(null, encodeRateLimitResponse(decision)),
        fail,
      );
  };
  return { ShouldRateLimit: shouldRateLimit };
}
