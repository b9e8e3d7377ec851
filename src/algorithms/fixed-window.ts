/**
 * fixed_window: windows aligned to the Unix epoch (start = now - now mod W), as envoyproxy/ratelimit
 * aligns them; a request is allowed iff count + hits <= L. State: the window start and its count; a state
 * of an earlier window counts as empty (the stored start, not the key's TTL, decides, so the memory store
 * and Redis agree even if expiry runs late); a state of a later window is decided in that window.
 */
import { mod } from './int-math.js';
import type { Algorithm, AlgorithmParams, Evaluation } from './types.js';

export interface FixedWindowState {
  /** Epoch ms at which the counted window starts. */
  readonly start: number;
  /** Hits committed in that window. */
  readonly count: number;
}

function evaluate(state: FixedWindowState | undefined, nowMs: number, params: AlgorithmParams, hits: number): Evaluation<FixedWindowState> {
  const { limit, windowMs } = params;
  // A state of a later window than now's (a caller whose clock is behind, or a call decided after the window it
  // was made in had ended) is the window the store is in: decide there, never write an older window over it.
  const nowStart = params.windowStartMs ?? nowMs - mod(nowMs, windowMs);
  const start = state !== undefined && state.start > nowStart ? state.start : nowStart;
  const count = state !== undefined && state.start === start ? state.count : 0;
  const allowed = count + hits <= limit;
  const remainingIfNotCommitted = Math.max(0, limit - count);
  const remainingIfCommitted = allowed ? Math.max(0, limit - count - hits) : remainingIfNotCommitted;
  // Allowed: the window end is when the quota is whole again (Envoy's x-ratelimit-reset). Rejected: hits that
  // fit in L are admitted when the next window starts; more than L never are, and the window end is the
  // full-replenish time.
  const untilEnd = start + windowMs - nowMs;
  return {
    outcome: { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs: untilEnd },
    next: { start, count: count + hits },
    ttlMs: untilEnd,
  };
}

export const fixedWindow: Algorithm<FixedWindowState> = { name: 'fixed_window', evaluate };
