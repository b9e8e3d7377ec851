/**
 * From a compiled limit to the store check (the engine's seam into throttling): the admission ceiling of
 * soft throttling and criticality shares, the elastic and ban fields with their keys.
 *
 * Ceilings (L = requests_per_unit, s = the class's share, p = soft):
 * - window algorithms: the check's limit A = floor(L × s), or floor(floor(L × (1 + p)) × s) with soft;
 *   elastic: own limit floor(L × s), max floor(M × s), capacity N as written;
 * - token_bucket: burst floor(B × s) (the tokens left after a request stay >= B − floor(B × s));
 * - leaky_bucket: the tolerance scaled the same way: burst 1 + floor((B − 1) × s).
 * The store reports remaining against A; reportedRemaining turns it back into what the client sees.
 */
import type { CompiledLimit } from '../config/types.js';
import { banKey, elasticKey } from '../vocab/keys.js';
import type { LimitCheck } from '../storage/counter-store.js';
import { PPM, scalePpm, type Criticality } from '../vocab/throttling.js';

export interface PlanContext {
  readonly keyPrefix: string;
  readonly domain: string;
  /** The rule's stats key (its config path): names the elastic aggregate. Undefined for request overrides. */
  readonly ruleStatsKey: string | undefined;
  readonly criticality: Criticality;
}

/** True when the limit has any throttling field (then it never uses envoyproxy/ratelimit's key format). */
export function hasThrottling(limit: CompiledLimit): boolean {
  return limit.throttling !== undefined || limit.banMs !== undefined || limit.shares !== undefined;
}

export function planCheck(check: LimitCheck, limit: CompiledLimit, ctx: PlanContext): LimitCheck {
  if (!hasThrottling(limit)) return check;
  const share = limit.shares?.[ctx.criticality] ?? PPM;
  const t = limit.throttling;
  let planned: LimitCheck = check;
  if (check.algorithm === 'token_bucket') planned = { ...check, burst: scalePpm(check.burst, share) };
  else if (check.algorithm === 'leaky_bucket') planned = { ...check, burst: 1 + scalePpm(check.burst - 1, share) };
  else {
    const ceiling = t?.mode === 'soft' ? check.limit + scalePpm(check.limit, t.ppm) : check.limit;
    planned = { ...check, limit: scalePpm(ceiling, share) };
    if (t?.mode === 'elastic' && ctx.ruleStatsKey !== undefined) {
      // A log of every hit of the whole rule would grow with its traffic: its aggregate is counted by the
      // sliding window counter (three integers) instead.
      const algorithm = check.algorithm === 'sliding_window_log' ? 'sliding_window_counter' : check.algorithm;
      const key = elasticKey(ctx.keyPrefix, ctx.domain, ctx.ruleStatsKey, algorithm, check.windowMs);
      planned = { ...planned, elastic: { max: scalePpm(t.max, share), capacity: t.capacity, key, ...(algorithm !== check.algorithm ? { algorithm } : {}) } };
    }
  }
  if (limit.banMs !== undefined) planned = { ...planned, ban: { ms: limit.banMs, key: banKey(check.key) } };
  return planned;
}

/** Remaining as the client sees it: against min(L, A) (above L, soft's extra room is not quota). */
export function reportedRemaining(check: LimitCheck, limit: CompiledLimit, remaining: number): number {
  const extra = check.limit - limit.requestsPerUnit;
  return extra > 0 ? Math.max(0, remaining - extra) : remaining;
}
