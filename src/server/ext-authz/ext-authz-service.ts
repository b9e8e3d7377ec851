/**
 * envoy.service.auth.v3.Authorization/Check: raw bytes in (ext-authz-decode.ts), the protocol-free
 * Authorizer (authz/authorize.ts), raw bytes out (ext-authz-encode.ts). Errors become gRPC statuses in the one
 * place they do for ShouldRateLimit (grpc-errors.ts): malformed → INVALID_ARGUMENT, too large →
 * RESOURCE_EXHAUSTED, store → UNAVAILABLE (Envoy's failure_mode_allow then decides).
 */
import type { Authorizer } from '../../authz/authorize.js';
import type { Clock } from '../../vocab/clock.js';
import { decodeCheckRequest, DEFAULT_CHECK_LIMITS, type CheckRequestLimits } from './ext-authz-decode.js';
import { encodeCheckResponse } from './ext-authz-encode.js';
import { decisionDeadline } from '../rls/rls-service.js';
import type { CallSignal } from '../grpc/lean/routes.js';
import { tracedCall } from '../grpc/traced-call.js';
import type { DecisionTracer } from '../../core/decision-trace.js';

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

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
  /** Tracing on: each call is a span under the trace context of its headers. */
  readonly tracer?: DecisionTracer;
}

/**
 * Check from bytes to bytes with the caller's deadline (epoch ms, undefined = none), a route of the gRPC port: decode
 * (throws synchronously for a malformed request), decide, encode. `call.signal` (read only by a request that
 * waits for a delayed slot) aborts when the call ends.
 */
export function checkCall(options: ExtAuthzServiceOptions): (request: Uint8Array, deadlineMs: number | undefined, call?: CallSignal) => Promise<Buffer> {
  const limits = options.limits ?? DEFAULT_CHECK_LIMITS;
  const { authorizer, clock, defaultTimeoutMs, deadlineMarginMs, maxWaitMs, tracer } = options;
  if (tracer !== undefined) {
    return (request, deadlineMs, call) => {
      const trace = tracer.start('Check', call?.headers);
      return tracedCall(trace, () => {
        const attrs = decodeCheckRequest(request, limits);
        return authorizer.check(attrs, decisionDeadline(deadlineMs, deadlineMarginMs, defaultTimeoutMs, clock, maxWaitMs), call, trace);
      }).then(encodeCheckResponse);
    };
  }
  return (request, deadlineMs, call) => {
    const attrs = decodeCheckRequest(request, limits);
    return authorizer.check(attrs, decisionDeadline(deadlineMs, deadlineMarginMs, defaultTimeoutMs, clock, maxWaitMs), call).then(encodeCheckResponse);
  };
}
