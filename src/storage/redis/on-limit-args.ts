/**
 * The on_limit part of batch.lua's per-check arguments and reply (layout in lua/on_limit.lua and the header
 * of batch.lua), encoded and decoded in one place.
 */
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { stateKey } from './state-key.js';

/** Appends check `c`'s five on_limit fields to the script arguments. */
export function onLimitArgs(c: LimitCheck, args: (string | number)[]): void {
  const o = c.onLimit;
  if (o === undefined) {
    args.push(0, '', -1, '', 0);
    return;
  }
  args.push(o.maxDelayMs ?? 0, o.degradeKey === undefined ? '' : stateKey(o.degradeKey, 'fixed_window'), o.degradeMax ?? -1, o.backoffKey ?? '', o.backoffTtlMs ?? 0);
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
