/**
 * Response headers of a decision (added by Envoy to the 429 and, unless RATELIMIT_HEADERS=limited,
 * to normal responses):
 * - `retry-after` (RFC 9110 delay-seconds) on rejection: when every rejecting enforced limit admits again;
 * - IETF draft-ietf-httpapi-ratelimit-headers (-08 … -10): `ratelimit-policy: "name";q=100;w=60` and
 *   `ratelimit: "name";r=50;t=30`, one list member per applied limit;
 * - optionally the `x-ratelimit-*` trio in Envoy's own format (draft-03), for clients that expect it
 *   when Envoy's enable_x_ratelimit_headers is off.
 */
import type { CompiledLimit } from '../config/types.js';
import type { LimitOutcome } from '../storage/counter-store.js';
import type { HeaderValue } from '../vocab/types.js';

export interface HeaderOptions {
  /** Where the IETF RateLimit headers go: every response, rejections only, or nowhere. */
  readonly mode: 'all' | 'limited' | 'none';
  readonly xRateLimit: boolean;
  /** RETRY_AFTER_HEADER: `retry-after` on rejections (default true; the reference sends none). */
  readonly retryAfter?: boolean;
  /** envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED: these three names, plain numbers, on every response. */
  readonly reference?: { readonly limit: string; readonly remaining: string; readonly reset: string };
}

export interface AppliedLimit {
  readonly limit: CompiledLimit;
  readonly outcome: LimitOutcome;
  readonly policyName: string;
  /** A calendar limit's current window length (ms): its `w=`, as a month is 28 to 31 days long. */
  readonly windowMs?: number;
  /** Its rejection rejects the request (false for shadow_mode and, unless all are over, quota_mode). */
  enforced: boolean;
  readonly quotaMode?: boolean;
}

const seconds = (ms: number) => Math.ceil(ms / 1000);

/** Printable ASCII without `\` and `"`: an sf-string's content as it is. */
const SF_PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** An sf-string: printable ASCII with `\` and `"` escaped; anything else becomes `?`. */
function sfString(text: string): string {
  if (SF_PLAIN.test(text)) return `"${text}"`; // the usual policy name: one test instead of two replaces
  return `"${text.replace(/[^\x20-\x7e]/g, '?').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A limit's policy name as an sf-string and its `ratelimit-policy` member: the same for every request. */
interface PolicyText {
  readonly policyName: string;
  readonly windowMs: number;
  readonly name: string;
  readonly member: string;
}

/**
 * The last policy text of each limit (compiled limits are immutable; a reload makes new ones). One entry per
 * limit: a policy name made from request values (detailed_metric) only misses, it never grows the cache.
 */
const policyTexts = new WeakMap<CompiledLimit, PolicyText>();

function policyText(a: AppliedLimit): PolicyText {
  const cached = policyTexts.get(a.limit);
  const windowMs = windowOf(a);
  if (cached !== undefined && cached.policyName === a.policyName && cached.windowMs === windowMs) return cached;
  const name = sfString(a.policyName);
  const text = { policyName: a.policyName, windowMs, name, member: `${name};q=${a.limit.requestsPerUnit};w=${seconds(windowMs)}` };
  policyTexts.set(a.limit, text);
  return text;
}

/** The window a limit's policy names: the limit's, or for a calendar limit the current calendar window's. */
function windowOf(a: AppliedLimit): number {
  return a.windowMs ?? a.limit.windowMs;
}

export function buildResponseHeaders(applied: readonly AppliedLimit[], overLimit: boolean, options: HeaderOptions): HeaderValue[] {
  const headers: HeaderValue[] = [];
  if (applied.length === 0) return headers;

  if (overLimit && options.retryAfter !== false) {
    let wait = 0;
    for (const a of applied) if (a.enforced && !a.outcome.allowed) wait = Math.max(wait, seconds(a.outcome.resetMs));
    headers.push({ key: 'retry-after', value: String(Math.max(1, wait)) });
  }

  if (options.mode === 'all' || (options.mode === 'limited' && overLimit)) {
    // One list member per distinct policy name, in order; the lists built as strings (no arrays to join).
    const seen = applied.length > 1 ? new Set<string>() : undefined;
    let policy = '';
    let state = '';
    for (const a of applied) {
      const t = policyText(a);
      if (seen !== undefined) {
        if (seen.has(t.name)) continue;
        seen.add(t.name);
      }
      const remaining = a.outcome.allowed ? a.outcome.remaining : 0;
      const member = `${t.name};r=${remaining};t=${seconds(a.outcome.resetMs)}`;
      policy = policy === '' ? t.member : `${policy}, ${t.member}`;
      state = state === '' ? member : `${state}, ${member}`;
    }
    headers.push({ key: 'ratelimit-policy', value: policy }, { key: 'ratelimit', value: state });
  }

  if (options.xRateLimit) {
    // As Envoy builds them: the limit with the lowest remaining speaks, every limit is listed as a policy.
    const chosen = tightest(applied);
    const policies = applied.map((a) => {
      const name = a.limit.name === undefined ? '' : `;name=${sfString(a.limit.name)}`;
      return `${a.limit.requestsPerUnit};w=${seconds(windowOf(a))}${name}`;
    });
    headers.push(
      { key: 'x-ratelimit-limit', value: [String(chosen.limit.requestsPerUnit), ...policies].join(', ') },
      { key: 'x-ratelimit-remaining', value: String(remainingOf(chosen)) },
      { key: 'x-ratelimit-reset', value: String(seconds(chosen.outcome.resetMs)) },
    );
  }
  if (options.reference) {
    // As envoyproxy/ratelimit: the limit with the lowest remaining speaks; its limit, remaining and reset seconds.
    const chosen = tightest(applied);
    headers.push(
      { key: options.reference.limit, value: String(chosen.limit.requestsPerUnit) },
      { key: options.reference.remaining, value: String(remainingOf(chosen)) },
      { key: options.reference.reset, value: String(seconds(chosen.outcome.resetMs)) },
    );
  }
  return headers;
}

/** The limit with the lowest remaining (the first of equals): the one the x-ratelimit and reference headers report. */
function tightest(applied: readonly AppliedLimit[]): AppliedLimit {
  let chosen = applied[0]!;
  for (const a of applied) if (remainingOf(a) < remainingOf(chosen)) chosen = a;
  return chosen;
}

function remainingOf(a: AppliedLimit): number {
  return a.outcome.allowed ? a.outcome.remaining : 0;
}
