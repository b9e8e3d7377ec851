/**
 * The compiled `on_limit` block of one limit (docs/on-limit.md): what happens to a request
 * over that limit and what its client is told. Frozen; produced by on-limit.ts, read by core/on-limit/.
 */
import type { Template } from './template.js';

export const ON_LIMIT_ACTIONS = ['reject', 'delay', 'degrade', 'redirect'] as const;
export type OnLimitAction = (typeof ON_LIMIT_ACTIONS)[number];

export const RETRY_POLICIES = ['fixed', 'exponential_backoff', 'none'] as const;
export type RetryPolicy = (typeof RETRY_POLICIES)[number];

export const REDIRECT_STATUSES = [302, 303, 307] as const;

export interface OnLimitHeader {
  /** Lower case. */
  readonly name: string;
  readonly value: Template;
}

export interface CompiledOnLimit {
  readonly action: OnLimitAction;
  /** delay: the longest wait for a reserved slot (ms). */
  readonly maxDelayMs?: number;
  /** degrade: headers added to the upstream request (templates, like `headers`). */
  readonly requestHeaders?: readonly OnLimitHeader[];
  /** degrade: most degraded hits per window; absent = no bound. */
  readonly degradeMax?: number;
  /** redirect: the `location` template (values URL-encoded). */
  readonly location?: Template;
  readonly retry: RetryPolicy;
  /** exponential_backoff: retry-after = max(exact, min(retryBaseMs × 2^(n−1), retryCapMs)). */
  readonly retryBaseMs?: number;
  readonly retryCapMs?: number;
  readonly body?: Template;
  /** The body's content type (default text/plain; charset=utf-8). */
  readonly contentType: string;
  readonly headers: readonly OnLimitHeader[];
  /** The HTTP status for protocols that can set one (ext_authz) when rejected; redirect: 302/303/307 (default 302). */
  readonly status?: number;
}

/** `on_limit` as GET /rules shows it: the YAML's field names, durations in ms, templates as written. */
export function describeOnLimit(o: CompiledOnLimit): Record<string, unknown> {
  const headers = (list: readonly OnLimitHeader[]) => Object.fromEntries(list.map((h) => [h.name, h.value.text]));
  return {
    action: o.action,
    ...(o.maxDelayMs !== undefined ? { max_delay_ms: o.maxDelayMs } : {}),
    ...(o.requestHeaders !== undefined ? { request_headers: headers(o.requestHeaders) } : {}),
    ...(o.degradeMax !== undefined ? { degrade_max: o.degradeMax } : {}),
    ...(o.location !== undefined ? { location: o.location.text } : {}),
    ...(o.status !== undefined ? { status: o.status } : {}),
    retry: o.retry,
    ...(o.retryBaseMs !== undefined ? { retry_base_ms: o.retryBaseMs, retry_cap_ms: o.retryCapMs } : {}),
    ...(o.body !== undefined ? { body: o.body.text, content_type: o.contentType } : {}),
    ...(o.headers.length > 0 ? { headers: headers(o.headers) } : {}),
  };
}
