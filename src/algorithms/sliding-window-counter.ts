/**
 * sliding_window_counter: two epoch-aligned fixed windows and a weighted estimate of the last W ms.
 *
 *   ws = now - now mod W, e = now - ws (0 <= e < W)
 *   estimate(now) = current + floor(previous × (W − e) / W)
 *   allowed iff estimate + hits <= L; a commit adds hits to `current`.
 *
 * The product previous × (W − e) can pass 2^53 (4e9 × a year in ms), so it goes through the exact
 * mulDivFloor. Memory: three integers per key. The estimate assumes the previous window's hits were spread
 * evenly; bench/accuracy.ts measures how often that differs from the exact log.
 *
 * resetMs when rejected: the first ms t >= now at which estimate(t) + hits <= L if nothing else is counted,
 * found in closed form: in the current window the previous window's weight decays; at the rollover the
 * current count becomes the decaying previous one and the new current is 0 (see firstAtMost).
 */
import { mod, mulDivCeil, mulDivFloor } from './int-math.js';
import type { Algorithm, AlgorithmParams, Evaluation } from './types.js';

export interface SlidingWindowCounterState {
  /** Epoch ms at which the `current` window starts. */
  readonly start: number;
  /** Hits committed in the window starting at `start`. */
  readonly current: number;
  /** Hits committed in the window before it. */
  readonly previous: number;
}

/**
 * The smallest e in [0, W] with floor(p × (W − e) / W) <= m, for p >= 0, m >= 0.
 * floor(p(W−e)/W) <= m  ⟺  p(W−e) < (m+1)W  ⟺  W − e <= ceil((m+1)W / p) − 1.
 */
export function firstAtMost(p: number, m: number, windowMs: number): number {
  if (p <= m) return 0;
  return windowMs - mulDivCeil(windowMs, m + 1, p) + 1;
}

/** ms from now until the estimate is 0 with counts (current, previous) in the window starting at ws. */
function untilEmpty(ws: number, current: number, previous: number, nowMs: number, windowMs: number): number {
  if (current > 0) return ws + windowMs + firstAtMost(current, 0, windowMs) - nowMs;
  if (previous > 0) return Math.max(0, ws + firstAtMost(previous, 0, windowMs) - nowMs);
  return 0;
}

function evaluate(state: SlidingWindowCounterState | undefined, nowMs: number, params: AlgorithmParams, hits: number): Evaluation<SlidingWindowCounterState> {
  const { limit, windowMs } = params;
  // A state of a later window than now's is the window the store is in (see fixed-window.ts): decide there,
  // with the previous window weighing fully (elapsed 0) while now is before that window's start.
  const nowStart = nowMs - mod(nowMs, windowMs);
  const ws = state !== undefined && state.start > nowStart ? state.start : nowStart;
  const elapsed = Math.max(0, nowMs - ws);
  let current = 0;
  let previous = 0;
  if (state !== undefined && state.start === ws) {
    current = state.current;
    previous = state.previous;
  } else if (state !== undefined && state.start === ws - windowMs) {
    previous = state.current;
  }
  const estimate = current + mulDivFloor(windowMs - elapsed, previous, windowMs);
  const allowed = estimate + hits <= limit;
  const remainingIfNotCommitted = Math.max(0, limit - estimate);
  const remainingIfCommitted = allowed ? limit - estimate - hits : remainingIfNotCommitted;

  let resetMs: number;
  if (allowed) {
    resetMs = untilEmpty(ws, current + hits, previous, nowMs, windowMs);
  } else if (hits > limit) {
    // Never admissible: report the full-replenish time, or a window when there is nothing to wait for (L = 0).
    const full = untilEmpty(ws, current, previous, nowMs, windowMs);
    resetMs = full > 0 ? full : windowMs;
  } else {
    const m = limit - hits;
    const inThisWindow = current <= m ? firstAtMost(previous, m - current, windowMs) : windowMs;
    resetMs = inThisWindow < windowMs ? ws + inThisWindow - nowMs : ws + windowMs + firstAtMost(current, m, windowMs) - nowMs;
  }

  return {
    outcome: { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs },
    next: { start: ws, current: current + hits, previous },
    // `current` is still read as `previous` during the next window.
    ttlMs: ws + 2 * windowMs - nowMs,
  };
}

export const slidingWindowCounter: Algorithm<SlidingWindowCounterState> = {
  name: 'sliding_window_counter',
  evaluate,
};
