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
 * - resetMs is the time until the limit is whole again. For a limit that would reject, a real call reports the
 *   time until h hits fit (its retry-after), which for the bucket and sliding algorithms can be shorter.
 *
 * "h <= R" is the algorithms' own admission rule: R is the quota left rounded down, and h is whole.
 */
import type { LimitCheck, LimitOutcome } from '../storage/counter-store.js';

/** The checks to send to the store: the same limits with hits 0 (read only). */
export function readOnlyChecks(checks: readonly LimitCheck[]): LimitCheck[] {
  return checks.map((c) => ({ ...c, hits: 0 }));
}

/** The outcomes a real call with `checks` would report, from the store's answers to readOnlyChecks(checks). */
export function previewOutcomes(checks: readonly LimitCheck[], observed: readonly LimitOutcome[]): LimitOutcome[] {
  const taken = new Map<string, number>();
  const rows = checks.map((check, i) => {
    const o = observed[i]!;
    const left = Math.max(0, o.remaining - (taken.get(check.key) ?? 0));
    const allowed = o.allowed && check.hits <= left;
    if (allowed && check.hits > 0) taken.set(check.key, (taken.get(check.key) ?? 0) + check.hits);
    return { check, allowed, left, resetMs: o.resetMs };
  });
  const admitted = rows.every((r) => r.allowed || !r.check.enforce);
  return rows.map((r) => ({
    allowed: r.allowed,
    remaining: admitted && r.allowed ? r.left - r.check.hits : r.left,
    resetMs: r.resetMs,
  }));
}
