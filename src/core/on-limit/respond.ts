/**
 * The engine's side of `on_limit` once the store has decided (docs/on-limit.md):
 *
 * - rejected: the rejecting enforced limit with the longest wait speaks for the request. Its on_limit sets the
 *   message: retry policy (`none` drops retry-after), templated body with its content-type, extra headers,
 *   the redirect `location`, and the HTTP status for protocols that can set one (decision.httpStatus).
 * - admitted degraded: the degraded limits' request_headers go to the upstream (first of a name wins).
 * - admitted with a delay: the answer waits (on the injected timer) until the reserved slot comes; the store
 *   only granted a delay that ends by the caller's deadline (checks.ts storeOnLimit). When the call ends first
 *   (its client cancelled, RST_STREAM, or the deadline passed), the wait stops at once (no timer is left) and
 *   the hits the store reserved are given back (CounterStore.refund: the bucket's debt, the GCRA TAT moved
 *   back, never past full), so the next request takes the slot no one will use.
 */
import type { CompiledLimit } from '../../config/types.js';
import type { CompiledOnLimit, OnLimitHeader } from '../../config/on-limit-types.js';
import { escapingFor, renderTemplate, type TemplateValues } from '../../config/template.js';
import type { LimitCheck, LimitOutcome, Refund } from '../../storage/counter-store.js';
import type { DecisionObserver } from '../observer.js';
import type { Timer } from '../../vocab/timer.js';
import type { HeaderValue, RateLimitDecision, RateLimitRequest } from '../../vocab/types.js';

/** Which limit, of which descriptor, a check is for. */
export interface CheckOwner {
  readonly limit: CompiledLimit;
  /** Index of the request descriptor. */
  readonly descriptor: number;
  /** The rule's stats key ({{name}} of an unnamed limit). */
  readonly statsKey: string;
}

/** The owner of every check, in the order the engine made them (each descriptor's limits in turn). */
export function checkOwners(resolved: readonly { readonly limits: readonly CompiledLimit[]; readonly statsKey: string }[]): CheckOwner[] {
  const owners: CheckOwner[] = [];
  resolved.forEach((r, descriptor) => {
    for (const limit of r.limits) owners.push({ limit, descriptor, statsKey: r.statsKey });
  });
  return owners;
}

export interface AtLimitInput {
  readonly request: RateLimitRequest;
  readonly checks: readonly LimitCheck[];
  readonly owners: readonly CheckOwner[];
  /** After withBackoff. */
  readonly outcomes: readonly LimitOutcome[];
  readonly nowMs: number;
  /** The call, whose `signal` (read only when a request waits: it may be made on first use) aborts when it ends. */
  readonly call?: { readonly signal: AbortSignal };
}

/** Gives reserved hits back to the store, at the time of the release. */
export type Release = (refunds: readonly Refund[]) => Promise<void>;

const encoder = new TextEncoder();

export class AtLimit {
  constructor(
    private readonly timer: Timer,
    private readonly release: Release,
  ) {}

  /** The decision with the on_limit answer applied; a promise only when a delayed request waits for its slot. */
  finish(decision: RateLimitDecision, input: AtLimitInput, observer: DecisionObserver): RateLimitDecision | Promise<RateLimitDecision> {
    if (decision.overallCode === 'OVER_LIMIT') return rejection(decision, input);
    const { outcomes, owners, request } = input;
    let delayMs = 0;
    const upstream: HeaderValue[] = [];
    outcomes.forEach((o, i) => {
      if (o.delayMs !== undefined) delayMs = Math.max(delayMs, o.delayMs);
      const owner = owners[i];
      if (o.degraded !== true || owner === undefined) return;
      observer.onAtLimit?.(request.domain, 'degraded', 0);
      const values = templateValues(input, i, 0);
      for (const h of owner.limit.onLimit?.requestHeaders ?? []) {
        if (!upstream.some((u) => u.key === h.name)) upstream.push(render(h, values));
      }
    });
    const answer = upstream.length === 0 ? decision : { ...decision, requestHeadersToAdd: [...decision.requestHeadersToAdd, ...upstream] };
    if (delayMs === 0) return answer;
    observer.onAtLimit?.(request.domain, 'delayed', delayMs);
    return this.timer.waitUntil(input.nowMs + delayMs, input.call?.signal).then(
      () => answer,
      (err: unknown) => this.releaseSlots(input, observer).then(() => Promise.reject(err instanceof Error ? err : new Error(String(err)))),
    );
  }

  /**
   * The call ended before its slot came: every delayed check's hits go back to the store (the checks the
   * store admitted with a wait; only token_bucket and leaky_bucket delay). A store that cannot take them
   * back (unreachable) only loses the slot, as before: the answer is already moot.
   */
  private async releaseSlots(input: AtLimitInput, observer: DecisionObserver): Promise<void> {
    const refunds: Refund[] = [];
    input.outcomes.forEach((o, i) => {
      const check = input.checks[i];
      if (o.delayMs === undefined || check === undefined || check.hits <= 0) return;
      if (check.algorithm !== 'token_bucket' && check.algorithm !== 'leaky_bucket') return;
      refunds.push({ key: check.key, algorithm: check.algorithm, limit: check.limit, windowMs: check.windowMs, units: check.hits, windowStart: 0 });
    });
    if (refunds.length === 0) return;
    await this.release(refunds).then(
      () => observer.onDelayReleased?.(input.request.domain, true),
      () => observer.onDelayReleased?.(input.request.domain, false),
    );
  }
}

/** The rejection's message, from the limit that speaks for it (longest wait among the enforced rejections). */
function rejection(decision: RateLimitDecision, input: AtLimitInput): RateLimitDecision {
  const { outcomes, checks, owners } = input;
  let speaker = -1;
  for (let pass = 0; pass < 2 && speaker < 0; pass++) {
    // enforced rejections first; only when there is none (quota_mode), any rejection
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      if (o.allowed || (pass === 0 && !checks[i]!.enforce)) continue;
      if (speaker < 0 || o.resetMs > outcomes[speaker]!.resetMs) speaker = i;
    }
  }
  const o: CompiledOnLimit | undefined = owners[speaker]?.limit.onLimit;
  if (o === undefined) return decision;
  const retryAfter = Math.max(1, Math.ceil(outcomes[speaker]!.resetMs / 1000));
  const values = templateValues(input, speaker, retryAfter);
  const headers = o.retry === 'none' ? decision.responseHeadersToAdd.filter((h) => h.key !== 'retry-after') : [...decision.responseHeadersToAdd];
  let rawBody: Uint8Array | undefined;
  if (o.body !== undefined) {
    rawBody = encoder.encode(renderTemplate(o.body, values, escapingFor(o.contentType)));
    headers.push({ key: 'content-type', value: o.contentType });
  }
  for (const h of o.headers) headers.push(render(h, values));
  if (o.action === 'redirect' && o.location !== undefined) headers.push({ key: 'location', value: renderTemplate(o.location, values, 'url') });
  return {
    ...decision,
    responseHeadersToAdd: headers,
    ...(rawBody !== undefined ? { rawBody } : {}),
    ...(o.status !== undefined ? { httpStatus: o.status } : {}),
  };
}

function render(h: OnLimitHeader, values: TemplateValues): HeaderValue {
  return { key: h.name, value: renderTemplate(h.value, values, 'header') };
}

function templateValues(input: AtLimitInput, i: number, retryAfter: number): TemplateValues {
  const owner = input.owners[i]!;
  const outcome = input.outcomes[i]!;
  const entries = input.request.descriptors[owner.descriptor]?.entries ?? [];
  const resetAt = Math.ceil((input.nowMs + outcome.resetMs) / 1000) * 1000;
  return {
    retry_after: retryAfter,
    limit: owner.limit.requestsPerUnit,
    remaining: outcome.allowed ? outcome.remaining : 0,
    window: owner.limit.windowMs / 1000,
    name: owner.limit.name ?? owner.statsKey,
    domain: input.request.domain,
    descriptor: shorten(entries.map((e) => `${e.key}=${e.value}`).join(',')),
    reset_at: new Date(resetAt).toISOString().replace(/\.\d{3}Z$/, 'Z'),
  };
}

/**
 * The longest {{descriptor}} inserted, in UTF-16 units: a value may be longer than MAX_VALUE_BYTES (decided all
 * the same, vocab/request-limits.ts), and a header or a location of tens of kilobytes would pass Envoy's header
 * size limits. Longer text is cut and ends with '…' (a surrogate pair cut in half renders like any raw byte).
 */
export const MAX_DESCRIPTOR_TEXT = 1024;

function shorten(text: string): string {
  return text.length <= MAX_DESCRIPTOR_TEXT ? text : `${text.slice(0, MAX_DESCRIPTOR_TEXT - 1)}\u2026`;
}
