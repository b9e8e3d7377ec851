/**
 * The exact rate meter behind token_bucket and leaky_bucket.
 *
 * A token bucket of capacity B refilled with L tokens per W ms, and GCRA (the leaky bucket as a meter) with
 * emission interval T = W/L and tolerance τ = (B − 1)·T, are the same test written two ways. We keep GCRA's
 * form because its state is one instant, the theoretical arrival time TAT: the bucket is full again at TAT,
 * and holds B − (TAT − now)/T tokens before it. A request of h hits is allowed iff
 *
 *   max(TAT, now) + h·T − now <= B·T,     and a commit sets TAT = max(TAT, now) + h·T.
 *
 * Exactness: T = W/L is fractional (W = 1000, L = 100000 gives 0.01 ms), so TAT is kept as a rational with
 * denominator L: whole ms plus a numerator in [0, L). Sums never round, and h·T, B·T are split into quotient
 * and remainder by the exact mulDivRem, so no floating-point tokens ever accumulate. With the bounds of
 * PARAM_BOUNDS (L, B < 2^32, W <= 2^35, B·W/L <= 2^48 ms) every intermediate is an integer below 2^53.
 *
 * on_limit `delay` (params.maxDelayMs): a request whose wait until admissible is at most maxDelayMs is admitted
 * now, its commit setting TAT as above (the bucket runs into debt by the wait), and the wait is reported.
 *
 * When L changes (a config reload keeps the key), a stored TAT with another denominator is rounded up to the
 * next whole ms: conservative by less than 1 ms.
 */
import { ceilDiv, mulDivRem } from './int-math.js';
import type { AlgorithmParams, Evaluation } from './types.js';

export interface MeterState {
  /** TAT = tatMs + tatFrac / den (epoch ms). */
  readonly tatMs: number;
  readonly tatFrac: number;
  /** The limit L the fraction is counted in. */
  readonly den: number;
}

/** Tokens left when the bucket is `dm + df/L` ms short of full: B − ceil((dm·L + df)/W), at least 0. */
function tokensLeft(dm: number, df: number, params: AlgorithmParams): number {
  const [q, r] = mulDivRem(params.limit, dm, params.windowMs);
  return Math.max(0, params.burst - (q + ceilDiv(r + df, params.windowMs)));
}

/** Whole ms covering `ms + frac/L` (frac >= 0). */
function ceilMs(ms: number, frac: number): number {
  return frac > 0 ? ms + 1 : ms;
}

export function evaluateMeter(state: MeterState | undefined, nowMs: number, params: AlgorithmParams, hits: number): Evaluation<MeterState> {
  const { limit, windowMs, burst } = params;
  if (limit === 0) {
    // No refill at all: only checks (hits = 0) pass; a window is the honest retry-after.
    const allowed = hits === 0;
    return {
      outcome: { allowed, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: allowed ? 0 : windowMs },
      next: state ?? { tatMs: nowMs, tatFrac: 0, den: 1 },
      ttlMs: 1,
    };
  }
  // The deficit D = max(TAT, now) − now = dm + df/L ms (0 = full bucket).
  let dm = 0;
  let df = 0;
  if (state !== undefined) {
    const tatMs = state.den === limit ? state.tatMs : ceilMs(state.tatMs, state.tatFrac);
    const tatFrac = state.den === limit ? state.tatFrac : 0;
    if (tatMs >= nowMs) {
      dm = tatMs - nowMs;
      df = tatFrac;
    }
  }
  // After the hits: D + h·T.
  const [hq, hr] = mulDivRem(windowMs, hits, limit);
  let nm = dm + hq;
  let nf = df + hr;
  if (nf >= limit) {
    nf -= limit;
    nm += 1;
  }
  const [bq, br] = mulDivRem(windowMs, burst, limit);
  let allowed = nm < bq || (nm === bq && nf <= br);
  let delayMs = 0;
  let wait = 0;
  if (!allowed && hits <= burst) {
    // Admissible once the deficit has shrunk to (B − h)·T: at now + D − (B − h)·T.
    const [gq, gr] = mulDivRem(windowMs, burst - hits, limit);
    let wm = dm - gq;
    let wf = df - gr;
    if (wf < 0) {
      wf += limit;
      wm -= 1;
    }
    wait = ceilMs(wm, wf);
    // on_limit delay: reserve the slot now (the commit below moves TAT on) and answer when it comes.
    if (hits > 0 && wait <= (params.maxDelayMs ?? 0)) {
      allowed = true;
      delayMs = wait;
    }
  }
  const remainingIfNotCommitted = tokensLeft(dm, df, params);
  const remainingIfCommitted = allowed ? tokensLeft(nm, nf, params) : remainingIfNotCommitted;

  let resetMs: number;
  if (allowed) {
    resetMs = ceilMs(nm, nf); // until the bucket is full again
  } else if (hits > burst) {
    const full = ceilMs(dm, df);
    resetMs = full > 0 ? full : windowMs;
  } else {
    resetMs = wait;
  }
  return {
    outcome:
      delayMs > 0
        ? { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs, delayMs }
        : { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs },
    next: { tatMs: nowMs + nm, tatFrac: nf, den: limit },
    // Past TAT the bucket is full, which is what no state means.
    ttlMs: Math.max(1, ceilMs(nm, nf)),
  };
}
