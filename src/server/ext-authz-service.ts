/**
 * envoy.service.auth.v3.Authorization/Check on grpc-js: raw bytes in (ext-authz-decode.ts), the protocol-free
 * Authorizer (authz/authorize.ts), raw bytes out (ext-authz-encode.ts). Errors become gRPC statuses in the one
 * place they do for ShouldRateLimit (grpc-errors.ts): malformed → INVALID_ARGUMENT, too large →
 * RESOURCE_EXHAUSTED, store → UNAVAILABLE (Envoy's failure_mode_allow then decides).
 */
import * as grpc from '@grpc/grpc-js';
import type { Authorizer } from '../authz/authorize.js';
import type { Clock } from '../vocab/clock.js';
import { decodeCheckRequest, DEFAULT_CHECK_LIMITS, type CheckRequestLimits } from './ext-authz-decode.js';
import { encodeCheckResponse } from './ext-authz-encode.js';
import { toGrpcError } from './grpc-errors.js';
import { callDeadline, callSignal, decisionDeadline } from './rls-service.js';

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

const identity = (b: Buffer): Buffer => b;

/** The Authorization service with bytes on both sides: decoding and encoding are ours. */
export const AUTHORIZATION_SERVICE: grpc.ServiceDefinition = {
  Check: {
    path: CHECK_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export interface ExtAuthzServiceOptions {
  readonly authorizer: Authorizer;
  readonly clock: Clock;
  readonly deadlineMarginMs: number | (() => number);
  readonly defaultTimeoutMs: number;
  /** The longest a decision waits, whatever deadline the caller sent (default MAX_BUDGET_MS). */
  readonly maxWaitMs?: number;
  readonly limits?: CheckRequestLimits;
  /** Every call answered with a gRPC error: the cause and the status name. */
  readonly onError?: (err: unknown, status: string) => void;
}

/**
 * Check from bytes to bytes with the caller's deadline (epoch ms, undefined = none), for both transports: decode
 * (throws synchronously for a malformed request), decide, encode. `call.signal` (read only by a request that
 * waits for a delayed slot) aborts when the call ends.
 */
export function checkCall(options: ExtAuthzServiceOptions): (request: Uint8Array, deadlineMs: number | undefined, call?: { readonly signal: AbortSignal }) => Promise<Buffer> {
  const limits = options.limits ?? DEFAULT_CHECK_LIMITS;
  const { authorizer, clock, defaultTimeoutMs, deadlineMarginMs, maxWaitMs } = options;
  return (request, deadlineMs, call) => {
    const attrs = decodeCheckRequest(request, limits);
    return authorizer.check(attrs, decisionDeadline(deadlineMs, deadlineMarginMs, defaultTimeoutMs, clock, maxWaitMs), call).then(encodeCheckResponse);
  };
}

export function extAuthzHandlers(options: ExtAuthzServiceOptions): grpc.UntypedServiceImplementation {
  const answer = checkCall(options);
  const check: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
    const fail = (err: unknown) => {
      // Ended by its client or deadline (a delayed request's wait stops then): no one to answer, no error.
      if (call.cancelled) return;
      const e = toGrpcError(err);
      options.onError?.(err, grpc.status[e.code]);
      callback(e);
    };
    let reply: Promise<Buffer>;
    try {
      reply = answer(call.request, callDeadline(call), callSignal(call));
    } catch (err) {
      fail(err);
      return;
    }
    reply.then((bytes) => callback(null, bytes), fail);
  };
  return { Check: check };
}
