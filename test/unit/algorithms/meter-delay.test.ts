/**
 * on_limit delay in the meter (token_bucket and leaky_bucket): a request whose wait is within maxDelayMs is
 * admitted with its slot reserved (TAT moves on by its hits), reporting the wait; beyond it nothing changes.
 */
import { describe, expect, it } from 'vitest';
import { evaluateMeter, type MeterState } from '../../../src/algorithms/meter.js';

const params = { limit: 10, windowMs: 1000, burst: 1, maxDelayMs: 250 }; // one slot per 100 ms

function run(times: number[], p = params) {
  let state: MeterState | undefined;
  return times.map((now) => {
    const e = evaluateMeter(state, now, p, 1);
    if (e.outcome.allowed) state = e.next;
    return e.outcome;
  });
}

describe('meter delay', () => {
  it('admits a burst into debt up to max_delay, each one slot later, then rejects with the exact wait', () => {
    const outcomes = run([0, 0, 0, 0, 0]);
    expect(outcomes.map((o) => o.delayMs ?? 0)).toEqual([0, 100, 200, 0, 0]);
    expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, false, false]);
    // the third reservation leaves the next slot 300 ms out: beyond max_delay, rejected and told so
    expect(outcomes[3]!.resetMs).toBe(300);
    expect(outcomes[3]!.remainingIfNotCommitted).toBe(0);
  });

  it('with a fractional emission interval the wait is rounded up to whole ms', () => {
    const outcomes = run([0, 0, 0], { limit: 3, windowMs: 1000, burst: 1, maxDelayMs: 1000 });
    expect(outcomes.map((o) => o.delayMs ?? 0)).toEqual([0, 334, 667]);
  });

  it('never delays without maxDelayMs, a request larger than the bucket, or a check of 0 hits', () => {
    expect(run([0, 0], { limit: 10, windowMs: 1000, burst: 1, maxDelayMs: 0 })[1]!.allowed).toBe(false);
    const big = evaluateMeter(undefined, 0, { ...params, burst: 2 }, 3);
    expect(big.outcome.allowed).toBe(false);
    expect(big.outcome.delayMs).toBeUndefined();
    const first = evaluateMeter(undefined, 0, params, 1).next;
    expect(evaluateMeter(first, 0, params, 0).outcome).toMatchObject({ allowed: true });
    expect(evaluateMeter(first, 0, params, 0).outcome.delayMs).toBeUndefined();
  });
});
