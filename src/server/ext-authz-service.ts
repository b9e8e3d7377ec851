/**
 * envoy.service.auth.v3.Authorization/Check on grpc-js: raw bytes in (ext-authz-decode.ts), the protocol-free
 * Authorizer (authz/authorize.ts), raw bytes out (ext-authz-encode.ts). Errors become gRPC statuses in the one
 * place they do for ShouldRateLimit (grpc-errors.ts): malformed → INVALID_ARGUMENT, too large →
 * RESOURCE_EXHAUSTED, store → UNAVAILABLE (Envoy's failure_mode_allow then decides).
 */
import * as grpc from '@grpc/grpc-js';
import type { Authorizer } from '../authz/authorize.js';
import type { Clock } from '../core/clock.js';
import { decodeCheckRequest, DEFAULT_CHECK_LIMITS, type CheckRequestLimits } from './ext-authz-decode.js';
import { encodeCheckResponse } from './ext-authz-encode.js';
import { toGrpcError } from './grpc-errors.js';
import { deadlineOf } from './rls-service.js';

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
  readonly limits?: CheckRequestLimits;
  /** Every call answered with a gRPC error: the cause and the status name. */
  readonly onError?: (err: unknown, status: string) => void;
}

export function extAuthzHandlers(options: ExtAuthzServiceOptions): grpc.UntypedServiceImplementation {
  const limits = options.limits ?? DEFAULT_CHECK_LIMITS;
  const check: grpc.handleUnaryCall<Buffer, Buffer> = (call, callback) => {
    const fail = (err: unknown) => {
      const e = toGrpcError(err);
      options.onError?.(err, grpc.status[e.code]);
      callback(e);
    };
    let attrs;
    try {
      attrs = decodeCheckRequest(call.request, limits);
    } catch (err) {
      fail(err);
      return;
    }
    const margin = options.deadlineMarginMs;
    const deadlineMs = deadlineOf(call, typeof margin === 'number' ? margin : margin(), options.defaultTimeoutMs, options.clock);
    options.authorizer.check(attrs, deadlineMs).then((answer) => callback(null, encodeCheckResponse(answer)), fail);
  };
  return { Check: check };
}
