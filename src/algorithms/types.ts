/**
 * The contract every rate-limit algorithm fulfils, in TypeScript (memory store) and in Lua (Redis store).
 * Both implementations must give the same decision for the same state, time and parameters.
 */

export const ALGORITHM_NAMES = [
  'fixed_window',
  'sliding_window_log',
  'sliding_window_counter',
  'token_bucket',
  'leaky_bucket',
] as const;
export type AlgorithmName = (typeof ALGORITHM_NAMES)[number];

export function isAlgorithmName(name: string): name is AlgorithmName {
  return (ALGORITHM_NAMES as readonly string[]).includes(name);
}

/** Parameters of one limit; all integers. */
export interface AlgorithmParams {
  /** L: requests admitted per window (>= 0; 0 rejects everything). */
  readonly limit: number;
  /** W: window length in milliseconds (> 0). */
  readonly windowMs: number;
  /**
   * token_bucket: bucket capacity (default L). leaky_bucket: tolerance in requests (default 1: smooth).
   * Window algorithms ignore it.
   */
  readonly burst: number;
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
}
