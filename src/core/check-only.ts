/**
 * Check-only decisions (POST /json with JSON_API=check): what ShouldRateLimit WOULD answer, consuming nothing.
 *
 * The store is asked with hits = 0 for every limit, which by the CounterStore contract reads the state and
 * writes nothing. From each limit's remaining quota R (the state as it stands) the answer for the request's
 * real hits h is then derived exactly as the store's batch rule would decide it:
 *
 * - a limit admits h iff h <= R (less what an earlier check of the same key in this batch would take: a
 *   descriptor sent twice counts twice, as in a real call);
 * - the request is admitted iff every enforced limit admits it;
 * - remaining is R - h for an admitted request's admitting limits, else R (a rejected request consumes nothing);
 * - resetMs is the time until the limit is whole again, as a real call reports it: for an admitted limit, after
 *   taking the h hits (afterHits: a bucket refills them, a sliding log keeps them a window), so that /json and
 *   gRPC agree (a token bucket's 1 s, not the 0 s of the untouched state). For a limit that would reject, a real
 *   call reports the time until h hits fit (its retry-after), which for the bucket and sliding algorithms can be
 *   shorter.
 *
 * "h <= R" is the algorithms' own admission rule: R is the quota left rounded down, and h is whole.
 */
import { firstAtMost } from '../algorithms/sliding-window-counter.js';
import type { LimitCheck, LimitOutcome } from '../storage/counter-store.js';

/** The checks to send to the store: the same limits with hits 0 (read only). */
export function readOnlyChecks(checks: readonly LimitCheck[]): LimitCheck[] {
  return checks.map((c) => ({ ...c, hits: 0 }));
}

/** The outcomes a real call with `checks` would report at `nowMs`, from the store's answers to readOnlyChecks(checks). */
export function previewOutcomes(checks: readonly LimitCheck[], observed: readonly LimitOutcome[], nowMs: number): LimitOutcome[] {
  const taken = new Map<string, number>();
  const rows = checks.map((check, i) => {
    const o = observed[i]!;
    const left = Math.max(0, o.remaining - (taken.get(check.key) ?? 0));
    const allowed = o.allowed && check.hits <= left;
    if (allowed && check.hits > 0) taken.set(check.key, (taken.get(check.key) ?? 0) + check.hits);
    return { check, allowed, left, resetMs: o.resetMs };
  });
  const admitted = rows.every((r) => r.allowed || !r.check.enforce);
  return rows.map((r) => {
    const taking = admitted && r.allowed && r.check.hits > 0;
    return {
      allowed: r.allowed,
      remaining: taking ? r.left - r.check.hits : r.left,
      resetMs: taking ? afterHits(r.check, r.left, r.resetMs, nowMs) : r.resetMs,
    };
  });
}

/**
 * Until the limit is whole again once `check.hits` are taken now, from `resetMs`, the same before taking them
 * (the algorithms' own "when allowed" resetMs, src/algorithms). A fixed window ends when it ends; a meter
 * (token or leaky bucket) needs h·W/L ms more to refill; a sliding log keeps the new hits for a window; a
 * sliding counter's current window decays through the next one, gone at the latest when that one ends.
 */
function afterHits(check: LimitCheck, left: number, resetMs: number, nowMs: number): number {
  const { algorithm, windowMs, limit, hits } = check;
  switch (algorithm) {
    case 'token_bucket':
    case 'leaky_bucket':
      return limit > 0 ? resetMs + Math.ceil((hits * windowMs) / limit) : resetMs;
    case 'sliding_window_log':
      return windowMs;
    case 'sliding_window_counter': {
      // The hits land in the current window; taking the estimate as its count (exact while the previous window
      // is empty, else an upper bound), that count has decayed to 0 firstAtMost(...) ms into the next window.
      const current = limit - left + hits;
      return Math.max(resetMs, windowMs - (nowMs % windowMs) + firstAtMost(current, 0, windowMs));
    }
    default:
      return resetMs;
  }
}
