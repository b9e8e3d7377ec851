/**
 * The contract every rate-limit algorithm fulfils, in TypeScript (memory store) and in Lua (Redis store).
 * Both implementations must give the same decision for the same state, time and parameters.
 */
import type { AlgorithmName } from '../vocab/algorithm-names.js';

/** Parameters of one limit; all integers. */
export interface AlgorithmParams {
  /** L: requests admitted per window (>= 0; 0 rejects everything). */
  readonly limit: number;
  /** W: window length in milliseconds (> 0). */
  readonly windowMs: number;
  /** fixed_window: the window's start when it is not epoch-aligned (a calendar window); now lies in [start, start + W). */
  readonly windowStartMs?: number;
  /**
   * token_bucket: bucket capacity (default L). leaky_bucket: tolerance in requests (default 1: smooth).
   * Window algorithms ignore it.
   */
  readonly burst: number;
  /**
   * token_bucket / leaky_bucket only (on_limit `delay`): a request that would be admissible within this many ms
   * is admitted now with its slot reserved (the bucket runs into debt, TAT moves on) and reports the wait in
   * `delayMs`. 0 or absent: no delay. Window algorithms ignore it.
   */
  readonly maxDelayMs?: number;
}

/** What one algorithm says about one request against one limit. */
export interface AlgorithmOutcome {
  /** True when this limit alone admits the request's hits now. */
  readonly allowed: boolean;
  /** Quota left if the request is committed (only meaningful when allowed). */
  readonly remainingIfCommitted: number;
  /** Quota left if it is not committed (the state as it is). */
  readonly remainingIfNotCommitted: number;
  /**
   * Milliseconds: when allowed, until the limit is fully replenished (fixed window: until the window ends);
   * when not allowed, until the hits could be admitted (the retry-after).
   */
  readonly resetMs: number;
  /** Set (> 0) only when the request was admitted by reserving a slot this many ms ahead (see maxDelayMs). */
  readonly delayMs?: number;
}

/** What `Algorithm.evaluate` returns: the decision, and the state to store if the check is committed. */
export interface Evaluation<S> {
  readonly outcome: AlgorithmOutcome;
  /** The state after counting the hits (equal to the input state, or a fresh one, when hits = 0 or not allowed). */
  readonly next: S;
  /** How long `next` must be kept (integer ms >= 1): no longer than the algorithm needs it. */
  readonly ttlMs: number;
}

/**
 * One rate-limit algorithm: a pure function of (stored state, time, parameters, hits).
 * The matching Lua fragment in src/storage/redis/lua/algorithms/<name>.lua does the same arithmetic in the
 * same order, so the memory store and Redis take bit-identical decisions.
 * Preconditions (see `paramsError` in registry.ts): integer parameters within PARAM_BOUNDS.
 */
export interface Algorithm<S> {
  readonly name: AlgorithmName;
  /**
   * Pure: the decision for `hits` at `nowMs` given the stored state (undefined = none), and the state to
   * store if the check is committed. Never mutates `state`; never throws for parameters within bounds.
   */
  evaluate(state: S | undefined, nowMs: number, params: AlgorithmParams, hits: number): Evaluation<S>;
}
