/**
 * The engine's side of `on_limit` before and right after the store call: what each check asks of the store
 * (storage/counter-store.ts StoreOnLimit), and the retry-after each rejection then gets.
 */
import type { CompiledLimit } from '../../config/types.js';
import type { LimitOutcome, StoreOnLimit } from '../../storage/counter-store.js';
import { onLimitKey } from '../../vocab/keys.js';

/**
 * The store-side on_limit of a check on `key`, or nothing when the limit needs none (plain rejection, or one
 * whose message alone differs). Not for shadow checks (they never reject, so never delay, degrade or back
 * off) nor for check-only calls (they must change nothing). The delay allowed is
 * min(max_delay, deadlineMs − nowMs): the answer must be due by `deadlineMs`, the caller's deadline less the
 * margins the server and the engine took off (rate-limiter.ts delayMarginMs); a request that would wait longer
 * is rejected at once.
 */
export function storeOnLimit(
  limit: CompiledLimit,
  key: string,
  enforce: boolean,
  nowMs: number,
  deadlineMs: number | undefined,
  checkOnly: boolean,
): StoreOnLimit | undefined {
  const o = limit.onLimit;
  if (o === undefined || !enforce || checkOnly) return undefined;
  const s: { -readonly [K in keyof StoreOnLimit]: StoreOnLimit[K] } = {};
  if (o.action === 'delay' && o.maxDelayMs !== undefined) {
    const allowed = deadlineMs === undefined ? o.maxDelayMs : Math.min(o.maxDelayMs, Math.floor(deadlineMs - nowMs));
    if (allowed > 0) s.maxDelayMs = allowed;
  }
  if (o.action === 'degrade') {
    s.degradeKey = onLimitKey(key, 'degrade');
    if (o.degradeMax !== undefined) s.degradeMax = o.degradeMax;
  }
  if (o.retry === 'exponential_backoff') {
    s.backoffKey = onLimitKey(key, 'backoff');
    // Kept long enough for a client that waits the longest retry-after it can be told, plus a window.
    s.backoffTtlMs = (o.retryCapMs ?? 0) + limit.windowMs;
  }
  return Object.keys(s).length === 0 ? undefined : s;
}

/**
 * exponential_backoff: retry-after = max(exact reset, min(retry_base × 2^(n−1), retry_cap)) after the n-th
 * consecutive rejection. The cap bounds the backoff; it never shortens the exact wait (a client told to come
 * back earlier than its request could be admitted would only be rejected again).
 */
export function backoffResetMs(limit: CompiledLimit, outcome: LimitOutcome): number {
  const o = limit.onLimit;
  const n = outcome.rejections;
  if (outcome.allowed || o?.retry !== 'exponential_backoff' || n === undefined || n < 1) return outcome.resetMs;
  const base = o.retryBaseMs ?? 1000;
  const cap = o.retryCapMs ?? base;
  // 2^(n−1) overflows nothing we keep: past 2^40 the cap has long been reached.
  const backoff = Math.min(cap, base * 2 ** Math.min(n - 1, 40));
  return Math.max(outcome.resetMs, backoff);
}

/** The outcomes with each rejection's reset moved out by its backoff, by the limit each check belongs to. */
export function withBackoff(owners: readonly { readonly limit: CompiledLimit }[], outcomes: readonly LimitOutcome[]): LimitOutcome[] {
  return outcomes.map((o, i) => {
    const limit = owners[i]?.limit;
    if (limit === undefined || o.rejections === undefined) return o;
    const resetMs = backoffResetMs(limit, o);
    return resetMs === o.resetMs ? o : { ...o, resetMs };
  });
}
