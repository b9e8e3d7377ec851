/**
 * Which algorithms quota leases (src/lease/) can be taken from, and the compiled `lease:` of a
 * limit. Here, below config, storage and the lease room, because all three name them.
 */
import type { AlgorithmName } from '../vocab/algorithm-names.js';

/** fixed_window, sliding_window_counter and token_bucket have units a replica can hold; see src/lease/arithmetic.ts. */
export const LEASE_ALGORITHMS = ['fixed_window', 'sliding_window_counter', 'token_bucket'] as const;
export type LeaseAlgorithm = (typeof LEASE_ALGORITHMS)[number];

export function isLeaseAlgorithm(name: AlgorithmName): name is LeaseAlgorithm {
  return (LEASE_ALGORITHMS as readonly string[]).includes(name);
}

/** A compiled `lease:` of one limit. */
export interface LeaseSpec {
  /** Units claimed at a time (at least 1): `size` as a count, or that percentage of requests_per_unit. */
  readonly size: number;
  /** How long a replica may keep unused units before giving them back (ms, >= 1). */
  readonly ttlMs: number;
}
