/**
 * envoy.service.auth.v3.Authorization/Check as a lean route: the same bytes → decode (ext-authz-decode.ts) →
 * Authorizer → encode (ext-authz-encode.ts) → bytes as the grpc-js service (ext-authz-service.ts), with the
 * deadline the lean server parsed from `grpc-timeout`. Errors are thrown or rejected, and the server maps them
 * to statuses through grpc-errors.ts like every route.
 */
import { decodeCheckRequest, DEFAULT_CHECK_LIMITS } from '../ext-authz-decode.js';
import { encodeCheckResponse } from '../ext-authz-encode.js';
import type { ExtAuthzServiceOptions } from '../ext-authz-service.js';
import { decisionDeadline } from './rls-route.js';
import type { UnaryRoute } from './routes.js';

export function leanCheckRoute(options: ExtAuthzServiceOptions): UnaryRoute {
  const limits = options.limits ?? DEFAULT_CHECK_LIMITS;
  const margin = options.deadlineMarginMs;
  const { authorizer, clock, defaultTimeoutMs } = options;
  return (bytes, deadlineMs) => {
    const attrs = decodeCheckRequest(bytes, limits); // throws synchronously: answered as a status
    return authorizer.check(attrs, decisionDeadline(deadlineMs, margin, defaultTimeoutMs, clock)).then(encodeCheckResponse);
  };
}
