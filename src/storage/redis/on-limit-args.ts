/**
 * The on_limit part of batch.lua's packed per-check fields and reply (layout in lua/on_limit.lua and the header
 * of batch.lua), encoded and decoded in one place.
 */
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { stateKey } from './state-key.js';
import type { KeyIndex } from './throttling-args.js';

/** Writes check `c`'s five on_limit numbers at `at` of `out`; the keys they name go to `keys` (1-based, 0 = none). */
export function onLimitFields(c: LimitCheck, keys: KeyIndex, out: Float64Array, at: number): void {
  const o = c.onLimit;
  out[at] = o?.maxDelayMs ?? 0;
  out[at + 1] = o?.degradeKey === undefined ? 0 : keys.indexOf(stateKey(o.degradeKey, 'fixed_window'));
  out[at + 2] = o?.degradeMax ?? -1;
  out[at + 3] = o?.backoffKey === undefined ? 0 : keys.indexOf(o.backoffKey);
  out[at + 4] = o?.backoffTtlMs ?? 0;
}

/** An outcome of a batch that was rejected after all (another Cluster slot vetoed it): nothing was delayed or degraded. */
export function notAdmitted(o: LimitOutcome): LimitOutcome {
  if (o.delayMs === undefined && o.degraded === undefined) return o;
  const { delayMs: _delay, degraded: _degraded, ...rest } = o;
  return rest;
}

/**
 * The on_limit values of one check from the reply's tail at `at` (delay, degraded, rejections). Delay and
 * degradation only mean something for an admitted batch (a rejected one reserved and counted nothing).
 */
export function decodeOnLimitTail(values: readonly number[], at: number, admitted: boolean): Pick<LimitOutcome, 'delayMs' | 'degraded' | 'rejections'> {
  const delayMs = values[at]!;
  const degraded = values[at + 1] === 1;
  const rejections = values[at + 2]!;
  return {
    ...(admitted && delayMs > 0 ? { delayMs } : {}),
    ...(admitted && degraded ? { degraded: true } : {}),
    ...(rejections > 0 ? { rejections } : {}),
  };
}
