/**
 * The algorithms by name, and the parameter ranges in which their arithmetic is exact: words that config
 * validates against, keys and stores name, and request limits clamp to. The algorithms themselves, and the
 * contract they fulfil, are in algorithms/.
 */

export const ALGORITHM_NAMES = ['fixed_window', 'sliding_window_log', 'sliding_window_counter', 'token_bucket', 'leaky_bucket'] as const;
export type AlgorithmName = (typeof ALGORITHM_NAMES)[number];

export function isAlgorithmName(name: string): name is AlgorithmName {
  return (ALGORITHM_NAMES as readonly string[]).includes(name);
}

/**
 * The ranges in which every algorithm's arithmetic is exact (all intermediates are integers below 2^53;
 * see algorithms/int-math.ts). Config validation should reject limits outside them.
 */
export const PARAM_BOUNDS = Object.freeze({
  /** L <= 2^32 - 1, the largest `requests_per_unit` Envoy's uint32 can carry. */
  maxLimit: 4_294_967_295,
  /** W <= 2^35 ms (about 397 days; a `year` unit is 365 days). */
  maxWindowMs: 34_359_738_368,
  /** burst <= 2^32 - 1. */
  maxBurst: 4_294_967_295,
  /** Bucket algorithms: burst × W / L (the time to refill an empty bucket) <= 2^48 ms (about 8900 years). */
  maxRefillMs: 281_474_976_710_656,
  /** hits per check <= 2^32 - 1 (Envoy's hits_addend is a uint32). */
  maxHits: 4_294_967_295,
});
