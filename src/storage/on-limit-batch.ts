/**
 * The store-side half of `on_limit` (counter-store.ts StoreOnLimit) for the in-process batch (apply-batch.ts),
 * doing what lua/on_limit.lua does inside batch.lua, in the same order, on the same state layouts:
 *
 * - degrade: a check its algorithm rejects is admitted as degraded while its degrade counter (a fixed_window
 *   state of the limit's window and `degradeMax`, under degradeKey) admits the hits; the counter is committed
 *   with the batch. Without degradeMax nothing is counted.
 * - backoff: after the decision, a rejected batch adds one to the consecutive-rejection count of every
 *   enforced check that was not allowed; an admitted batch resets it for every allowed check with hits > 0.
 *   State: a fixed_window-shaped {start: expiry ms, count}; a state at or past its expiry counts as 0, so the
 *   stored time decides, not the store's TTL (memory and Redis agree on any clock).
 * - delay is the algorithm's (AlgorithmParams.maxDelayMs; meter.ts).
 */
import { getAlgorithm } from '../algorithms/registry.js';
import type { AlgorithmOutcome, AlgorithmParams } from '../algorithms/types.js';
import type { FixedWindowState } from '../algorithms/fixed-window.js';
import type { LimitCheck, LimitOutcome } from './counter-store.js';

/** A state to write with the batch when it is admitted. */
export interface PendingWrite {
  readonly key: string;
  readonly state: unknown;
  readonly ttlMs: number;
  /** The check whose algorithm owns the state's layout (a fixed_window stand-in for on_limit keys). */
  readonly check: LimitCheck;
}

/** The algorithm parameters of a check, with its on_limit delay. */
export function algorithmParams(check: LimitCheck): AlgorithmParams {
  const maxDelayMs = check.onLimit === undefined ? 0 : (check.onLimit.maxDelayMs ?? 0);
  if (check.windowStartMs !== undefined) return { limit: check.limit, windowMs: check.windowMs, burst: check.burst, windowStartMs: check.windowStartMs };
  return maxDelayMs > 0
    ? { limit: check.limit, windowMs: check.windowMs, burst: check.burst, maxDelayMs }
    : { limit: check.limit, windowMs: check.windowMs, burst: check.burst };
}

/** The fixed_window stand-in under which an on_limit key is stored (memory codecs are per algorithm). */
function standIn(check: LimitCheck, key: string, limit: number): LimitCheck {
  return { key, algorithm: 'fixed_window', limit, windowMs: check.windowMs, burst: 1, hits: check.hits, enforce: true };
}

/**
 * A check its algorithm did not allow, degraded when its on_limit says so and its degrade counter admits it:
 * the outcome to report (allowed, remaining 0) and the counter's state to commit (none when unbounded).
 * Undefined: not degraded.
 */
export function degradeCheck(
  check: LimitCheck,
  outcome: AlgorithmOutcome,
  nowMs: number,
  read: (key: string, check: LimitCheck) => unknown,
): { outcome: AlgorithmOutcome; write?: PendingWrite } | undefined {
  const key = check.onLimit?.degradeKey;
  if (key === undefined || outcome.allowed || check.hits === 0) return undefined;
  const degraded: AlgorithmOutcome = {
    allowed: true,
    remainingIfCommitted: 0,
    remainingIfNotCommitted: outcome.remainingIfNotCommitted,
    resetMs: outcome.resetMs,
  };
  const max = check.onLimit?.degradeMax;
  if (max === undefined) return { outcome: degraded };
  const counter = standIn(check, key, max);
  const e = getAlgorithm('fixed_window').evaluate(read(key, counter), nowMs, { limit: max, windowMs: check.windowMs, burst: 1 }, check.hits);
  if (!e.outcome.allowed) return undefined;
  return { outcome: degraded, write: { key, state: e.next, ttlMs: e.ttlMs, check: counter } };
}

/** Read and write access to on_limit state (the memory store's StateAccess fits). */
export interface BackoffAccess {
  read(key: string, check: LimitCheck): unknown;
  write(key: string, state: unknown, ttlMs: number, check: LimitCheck, exhausted: boolean): void;
}

/**
 * Counts or resets consecutive rejections after the batch was decided; returns, per check, the count
 * after this rejection (undefined where none was counted).
 */
export function trackBackoff(
  access: BackoffAccess,
  checks: readonly LimitCheck[],
  allowed: readonly boolean[],
  admitted: boolean,
  nowMs: number,
): (number | undefined)[] {
  return checks.map((check, i) => {
    const key = check.onLimit?.backoffKey;
    if (key === undefined) return undefined;
    const ttlMs = Math.max(1, check.onLimit?.backoffTtlMs ?? 1);
    const counter = standIn(check, key, 0);
    const stored = access.read(key, counter) as FixedWindowState | undefined;
    const count = stored !== undefined && stored.start > nowMs ? stored.count : 0;
    if (!admitted && !allowed[i] && check.enforce) {
      access.write(key, { start: nowMs + ttlMs, count: count + 1 }, ttlMs, counter, true);
      return count + 1;
    }
    // Reset by writing 0 (kept for its ttl, so a key rejected again soon reuses its entry).
    if (admitted && allowed[i] && check.hits > 0 && count > 0) access.write(key, { start: nowMs + ttlMs, count: 0 }, ttlMs, counter, false);
    return undefined;
  });
}

/** An outcome with its on_limit fields, each only when it says something. */
export function withOnLimit(o: LimitOutcome, delayMs: number | undefined, degraded: boolean, rejections: number | undefined): LimitOutcome {
  if (delayMs === undefined && !degraded && rejections === undefined) return o;
  // Assigned, not spread: this runs for every check of a limit with on_limit.
  const out: { -readonly [K in keyof LimitOutcome]: LimitOutcome[K] } = { allowed: o.allowed, remaining: o.remaining, resetMs: o.resetMs };
  if (delayMs !== undefined) out.delayMs = delayMs;
  if (degraded) out.degraded = true;
  if (rejections !== undefined) out.rejections = rejections;
  return out;
}
