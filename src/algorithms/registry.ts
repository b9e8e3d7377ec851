/**
 * The algorithm registry: name → pure module. An unknown name never reaches here (config validation uses
 * isAlgorithmName and paramsError); getAlgorithm throws for one as a programming error.
 */
import { fixedWindow } from './fixed-window.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingWindowCounter } from './sliding-window-counter.js';
import { slidingWindowLog } from './sliding-window-log.js';
import { tokenBucket } from './token-bucket.js';
import { PARAM_BOUNDS, type AlgorithmName } from '../vocab/algorithm-names.js';
import type { Algorithm, AlgorithmParams } from './types.js';

const ALGORITHMS: Readonly<Record<AlgorithmName, Algorithm<unknown>>> = Object.freeze({
  fixed_window: fixedWindow,
  sliding_window_log: slidingWindowLog,
  sliding_window_counter: slidingWindowCounter,
  token_bucket: tokenBucket,
  leaky_bucket: leakyBucket,
});

export function getAlgorithm(name: AlgorithmName): Algorithm<unknown> {
  const algorithm = ALGORITHMS[name];
  if (algorithm === undefined) throw new Error(`unknown rate-limit algorithm '${String(name)}'`);
  return algorithm;
}

function isIntegerIn(value: number, min: number, max: number): boolean {
  return Number.isInteger(value) && value >= min && value <= max;
}

/**
 * Why these parameters are outside the range where `name` computes exactly (see PARAM_BOUNDS), or
 * undefined when they are fine. For config validation: the message names the offending field.
 */
export function paramsError(name: AlgorithmName, params: AlgorithmParams): string | undefined {
  const { limit, windowMs, burst } = params;
  if (!isIntegerIn(limit, 0, PARAM_BOUNDS.maxLimit)) {
    return `requests_per_unit must be an integer from 0 to ${PARAM_BOUNDS.maxLimit}`;
  }
  if (!isIntegerIn(windowMs, 1, PARAM_BOUNDS.maxWindowMs)) {
    return `window must be a whole number of ms from 1 to ${PARAM_BOUNDS.maxWindowMs} (about 397 days)`;
  }
  if (name !== 'token_bucket' && name !== 'leaky_bucket') return undefined;
  if (!isIntegerIn(burst, 1, PARAM_BOUNDS.maxBurst)) {
    return `burst must be an integer from 1 to ${PARAM_BOUNDS.maxBurst}`;
  }
  // burst × W / L: the time an empty bucket takes to fill. A floating-point compare is enough: the exact
  // arithmetic holds up to about 2^52, so a rounding error at 2^48 cannot matter.
  if (limit > 0 && burst * (windowMs / limit) > PARAM_BOUNDS.maxRefillMs) {
    return `burst × window / requests_per_unit (the time to refill an empty bucket) must not exceed 2^48 ms`;
  }
  return undefined;
}
