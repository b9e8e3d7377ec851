/**
 * A decision of the engine as a Check answer (an ext_authz v3 CheckResponse):
 * - OK → status OK; the decision's request headers (e.g. `degrade`) go to the upstream request and its
 *   response headers (RateLimit, retry policy, warnings) to the downstream response;
 * - OVER_LIMIT → status RESOURCE_EXHAUSTED with a local reply: HTTP `httpStatus` (429 unless `on_limit`
 *   set another, e.g. 302 for a redirect with its `location` header), the decision's response headers
 *   and its body;
 * - the store failed and FAILURE_MODE=closed → status UNAVAILABLE with a 503 that says so.
 * Every header carries explicit append semantics: the first value of a name replaces, later ones add.
 */
import { wellFormed } from '../vocab/bytes.js';
import type { HeaderValue, RateLimitDecision } from '../vocab/types.js';
import type { AnswerHeader, CheckAnswer } from './types.js';

export const GRPC_OK = 0;
export const GRPC_RESOURCE_EXHAUSTED = 8;
export const GRPC_UNAVAILABLE = 14;

export const STORE_FAILURE_BODY = 'rate limit service unavailable: the counter store cannot answer and FAILURE_MODE=closed rejects requests meanwhile\n';

/** Headers with explicit append flags: the first value of each name replaces, later values of it add. */
export function withAppend(headers: readonly HeaderValue[]): AnswerHeader[] {
  const seen = new Set<string>();
  return headers.map((h) => {
    const key = wellFormed(h.key).toLowerCase();
    const append = seen.has(key);
    seen.add(key);
    return { key, value: wellFormed(h.value), append };
  });
}

export const ALLOW_EMPTY: CheckAnswer = Object.freeze({ code: GRPC_OK, message: '', requestHeaders: [], responseHeaders: [] });

export function storeFailureAnswer(): CheckAnswer {
  return {
    code: GRPC_UNAVAILABLE,
    message: 'rate limit store unavailable (FAILURE_MODE=closed)',
    denied: { status: 503, headers: withAppend([{ key: 'content-type', value: 'text/plain; charset=utf-8' }]), body: STORE_FAILURE_BODY },
  };
}

export function answerFor(decision: RateLimitDecision): CheckAnswer {
  if (decision.storeFailure === true && decision.overallCode === 'OVER_LIMIT') return storeFailureAnswer();
  if (decision.overallCode === 'OK') {
    return { code: GRPC_OK, message: '', requestHeaders: withAppend(decision.requestHeadersToAdd), responseHeaders: withAppend(decision.responseHeadersToAdd) };
  }
  const status = decision.httpStatus ?? 429;
  const body = decision.rawBody === undefined ? '' : wellFormed(new TextDecoder().decode(decision.rawBody));
  return {
    code: GRPC_RESOURCE_EXHAUSTED,
    message: status >= 300 && status < 400 ? `over rate limit: redirected (${status})` : 'over rate limit',
    denied: { status, headers: withAppend(decision.responseHeadersToAdd), body },
  };
}
