/**
 * The arithmetic of claiming and giving back lease units, over the algorithms' own states: the TypeScript
 * twin of lua/lease/claim.lua and give_back.lua (test/integration/storage/lease-conformance.test.ts runs
 * both on random traces), and the statement of what a lease is for each algorithm:
 *
 * - fixed_window: units of the current window's count, counted at the claim; valid until the window ends.
 * - sliding_window_counter: units added to the current window's count at the claim (the estimate then
 *   includes them for the rest of this window and, weighted, the next); valid until the window ends.
 * - token_bucket: tokens taken out of the shared bucket at the claim; valid for the ttl, and shrinking once
 *   the bucket would have refilled to full without the claim (see lease.ts), so that leased tokens and the
 *   refilled bucket never add up to more than the capacity.
 *
 * A claim takes `want` units when the algorithm admits `want` hits now, else what remains if that covers the
 * request's `need` (else none: a request that cannot be admitted takes no units from other replicas).
 * A give-back lowers the window's count (never below 0) only in the window the units came from; a bucket
 * gets the tokens back (never beyond full) only while it is counted under the same L.
 */
import { getAlgorithm } from '../algorithms/registry.js';
import type { AlgorithmParams } from '../algorithms/types.js';
import type { LeaseAlgorithm } from '../algorithms/lease-support.js';

export interface ClaimResult {
  readonly granted: number;
  readonly remainingBefore: number;
  readonly resetMs: number;
  readonly againMs: number;
  /** The state after the claim (the input when nothing was granted). */
  readonly next: unknown;
}

export function claimUnits(algorithm: LeaseAlgorithm, state: unknown, nowMs: number, params: AlgorithmParams, want: number, need: number): ClaimResult {
  const alg = getAlgorithm(algorithm);
  const first = alg.evaluate(state, nowMs, params, want);
  const before = first.outcome.remainingIfNotCommitted;
  let granted = 0;
  let resetMs = first.outcome.resetMs;
  let next = state;
  if (first.outcome.allowed) {
    granted = want;
    next = first.next;
  } else if (before >= need) {
    const rest = alg.evaluate(state, nowMs, params, before);
    if (rest.outcome.allowed) {
      granted = before;
      resetMs = rest.outcome.resetMs;
      next = rest.next;
    }
  }
  if (granted < need) resetMs = alg.evaluate(next, nowMs, params, need).outcome.resetMs;
  const againMs = granted < want ? alg.evaluate(next, nowMs, params, want).outcome.resetMs : 0;
  return { granted, remainingBefore: before, resetMs, againMs, next };
}

export { giveBackUnits, type GiveBackResult } from '../algorithms/give-back.js';
