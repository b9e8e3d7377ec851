/**
 * Units given back into a limit's state: a lease's unused units (src/lease/) and a refund (a descriptor with
 * Envoy's `is_negative_hits`, docs/costs.md). A count never goes below 0 and only the window the units were
 * counted in gets them (fixed_window, sliding_window_counter); a bucket never goes above full and only while
 * it is counted under the same L (token_bucket; leaky_bucket keeps the same meter state). The Lua twin is
 * src/storage/redis/lua/lease/give_back.lua (test/integration/storage/lease-conformance.test.ts).
 */
import type { FixedWindowState } from './fixed-window.js';
import { ceilDiv, mulDivRem } from './int-math.js';
import type { LeaseAlgorithm } from './lease-support.js';
import type { MeterState } from './meter.js';
import type { SlidingWindowCounterState } from './sliding-window-counter.js';
import type { AlgorithmParams } from './types.js';

export interface GiveBackResult {
  readonly returned: number;
  /** The state after the give-back (undefined: none, i.e. empty window / full bucket). */
  readonly next: unknown;
}

export function giveBackUnits(
  algorithm: LeaseAlgorithm,
  state: unknown,
  nowMs: number,
  params: AlgorithmParams,
  units: number,
  windowStart: number,
): GiveBackResult {
  if (state === undefined) return { returned: 0, next: state };
  const { limit, windowMs } = params;
  if (algorithm === 'fixed_window') {
    const s = state as FixedWindowState;
    if (s.start !== windowStart || windowStart + windowMs <= nowMs) return { returned: 0, next: state };
    const back = Math.min(s.count, units);
    return { returned: back, next: { start: s.start, count: s.count - back } };
  }
  if (algorithm === 'sliding_window_counter') {
    const s = state as SlidingWindowCounterState;
    if (s.start !== windowStart || windowStart + windowMs <= nowMs) return { returned: 0, next: state };
    const back = Math.min(s.current, units);
    return { returned: back, next: { ...s, current: s.current - back } };
  }
  const s = state as MeterState;
  if (s.den !== limit || limit === 0) return { returned: 0, next: state };
  if (s.tatMs < nowMs || (s.tatMs === nowMs && s.tatFrac === 0)) return { returned: 0, next: state };
  const missingBefore = missing(s.tatMs - nowMs, s.tatFrac, limit, windowMs);
  const [uq, ur] = mulDivRem(windowMs, units, limit);
  let nm = s.tatMs - uq;
  let nf = s.tatFrac - ur;
  if (nf < 0) {
    nf += limit;
    nm -= 1;
  }
  if (nm < nowMs || (nm === nowMs && nf === 0)) return { returned: missingBefore, next: undefined };
  return { returned: missingBefore - missing(nm - nowMs, nf, limit, windowMs), next: { tatMs: nm, tatFrac: nf, den: limit } };
}

/** Whole tokens a bucket lacks when it is dm + df/L ms short of full: ceil((dm·L + df) / W). */
function missing(dm: number, df: number, limit: number, windowMs: number): number {
  const [q, r] = mulDivRem(limit, dm, windowMs);
  return q + ceilDiv(r + df, windowMs);
}
