/**
 * token_bucket: capacity B = `burst` (the config defaults it to L), refilled continuously with L tokens per
 * W ms, starting full; a request of h hits is allowed iff the bucket holds at least h tokens, and a commit
 * takes them. Computed exactly by the shared meter (meter.ts), whose state is the instant the bucket is
 * full again.
 */
import { evaluateMeter, type MeterState } from './meter.js';
import type { Algorithm } from './types.js';

export type TokenBucketState = MeterState;

export const tokenBucket: Algorithm<TokenBucketState> = { name: 'token_bucket', evaluate: evaluateMeter };
