/**
 * leaky_bucket: GCRA, the leaky bucket as a meter. Emission interval T = W/L; `burst` requests may arrive
 * back to back (tolerance τ = (burst − 1)·T, the config's default burst of 1 gives τ = 0: perfectly smooth,
 * one request per T), after which requests are admitted one per T. Requests are never queued or delayed:
 * a request that arrives too early is rejected with the exact time it could pass.
 *
 * GCRA and a token bucket of capacity `burst` refilled at L per W are the same test (see meter.ts); the two
 * names differ in their default `burst` and in what users expect to configure, and they have separate keys.
 */
import { evaluateMeter, type MeterState } from './meter.js';
import type { Algorithm } from './types.js';

export type LeakyBucketState = MeterState;

export const leakyBucket: Algorithm<LeakyBucketState> = { name: 'leaky_bucket', evaluate: evaluateMeter };
