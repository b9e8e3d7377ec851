/**
 * The estimator of admission by predicted cost: the mean of the settled costs of the last window, `initial`
 * before any, never below 1, each cost clipped, fixed memory per rule and a bounded number of rules.
 */
import { describe, expect, it } from 'vitest';
import { CostEstimator, MAX_RULES, SLOTS } from '../../../src/cost/estimator.js';
import { costRole, parsePredicted, splitSettlement } from '../../../src/cost/settlement.js';

const SPEC = { initial: 500, windowMs: 300_000, clip: 4000 };
const T = 1_700_000_000_000;

describe('cost estimator', () => {
  it('predicts initial, then the mean of settled costs rounded up', () => {
    const e = new CostEstimator();
    expect(e.predict('r', SPEC, T)).toBe(500);
    e.observe('r', SPEC, 1000, T);
    e.observe('r', SPEC, 1001, T + 1);
    expect(e.read('r', SPEC, T + 2)).toEqual({ prediction: 1001, settled: 2 });
  });

  it('never predicts below 1, even after costs of 0', () => {
    const e = new CostEstimator();
    for (let i = 0; i < 5; i++) e.observe('r', SPEC, 0, T);
    expect(e.predict('r', SPEC, T)).toBe(1);
  });

  it('clips one huge cost to the rule bound', () => {
    const e = new CostEstimator();
    e.observe('r', SPEC, 1000, T);
    e.observe('r', SPEC, Number.MAX_SAFE_INTEGER, T);
    expect(e.predict('r', SPEC, T)).toBe(2500);
  });

  it('forgets costs older than the window, a slot at a time', () => {
    const e = new CostEstimator();
    const slotMs = SPEC.windowMs / SLOTS;
    const start = T - (T % slotMs);
    e.observe('r', SPEC, 100, start);
    e.observe('r', SPEC, 300, start + 5 * slotMs);
    expect(e.predict('r', SPEC, start + SLOTS * slotMs - 1)).toBe(200);
    expect(e.predict('r', SPEC, start + SLOTS * slotMs)).toBe(300); // the first slot has left the window
    expect(e.predict('r', SPEC, start + 15 * slotMs)).toBe(500); // both gone: initial
    // A slot reused after a full turn starts from zero.
    e.observe('r', SPEC, 700, start + 20 * slotMs);
    expect(e.read('r', SPEC, start + 20 * slotMs)).toEqual({ prediction: 700, settled: 1 });
  });

  it('keeps rules apart and holds at most MAX_RULES of them', () => {
    const e = new CostEstimator();
    e.observe('a', SPEC, 10, T);
    expect(e.predict('b', SPEC, T)).toBe(500);
    for (let i = 0; i < MAX_RULES + 50; i++) e.observe(`rule-${i}`, SPEC, 1, T);
    expect(e.size).toBe(MAX_RULES);
  });
});

describe('settlement', () => {
  it('takes the predicted_cost entry off the descriptor', () => {
    expect(splitSettlement([{ key: 'user', value: 'u' }])).toBeUndefined();
    expect(
      splitSettlement([
        { key: 'user', value: 'u' },
        { key: 'predicted_cost', value: '500' },
      ]),
    ).toEqual({ entries: [{ key: 'user', value: 'u' }], value: '500' });
  });

  it('parses only whole numbers from 1', () => {
    for (const bad of ['', '0', '-1', '1.5', ' 5', '5e3', 'abc', '99999999999']) expect(parsePredicted(bad)).toBeUndefined();
    expect(parsePredicted('1')).toBe(1);
    expect(parsePredicted('4294967295')).toBe(4_294_967_295);
  });

  it('charges the difference or refunds it; an admission charges P; a check stays a check', () => {
    expect(costRole(SPEC, '500', 1200, () => 7)).toEqual({ hits: 700, refund: 0, role: { kind: 'settlement', predicted: 500, actual: 1200 } });
    expect(costRole(SPEC, '500', 200, () => 7)).toEqual({ hits: 0, refund: 300, role: { kind: 'settlement', predicted: 500, actual: 200 } });
    expect(costRole(SPEC, undefined, 1, () => 7)).toEqual({ hits: 7, refund: 0, role: { kind: 'admission', predicted: 7 } });
    expect(costRole(SPEC, undefined, 0, () => 7)).toEqual({ hits: 0, refund: 0, role: { kind: 'admission', predicted: 7 } });
    // No prediction of the rule exceeds max(initial, clip): a larger P cannot refund the count away.
    expect(costRole(SPEC, '4001', 0, () => 7)).toEqual({ hits: 0, refund: 0, role: { kind: 'unsettled', reason: 'unparsed' } });
    expect(costRole(SPEC, '4000', 0, () => 7)).toEqual({ hits: 0, refund: 4000, role: { kind: 'settlement', predicted: 4000, actual: 0 } });
    expect(costRole(SPEC, 'x', 30, () => 7)).toEqual({ hits: 30, refund: 0, role: { kind: 'unsettled', reason: 'unparsed' } });
    expect(costRole(undefined, '5', 30, () => 7)).toEqual({ hits: 30, refund: 0, role: { kind: 'unsettled', reason: 'unpredicted' } });
    expect(costRole(undefined, undefined, 30, () => 7)).toBeUndefined();
  });
});
