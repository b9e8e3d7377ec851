/** fairShares: max-min fair by demand, in whole tokens, never past the limit; worthChanging's hysteresis. */
import { describe, expect, it } from 'vitest';
import { capShares, fairShares, worthChanging } from '../../../src/rlqs/shares.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('fairShares', () => {
  it('splits by demand: 30/s and 4/s under 20/s give about 15 and 5 (an even split would admit 14)', () => {
    expect(fairShares(20, [30, 4])).toEqual([15, 5]);
    expect(sum(fairShares(20, [30, 4]))).toBe(20);
  });

  it('gives Envoys whose demand is unknown an even share of what the measured ones leave', () => {
    expect(fairShares(20, [undefined, undefined])).toEqual([10, 10]);
    expect(fairShares(20, [2, undefined])).toEqual([3, 17]);
  });

  it('spreads what nobody wants evenly, and hands out whole tokens adding up to the limit', () => {
    expect(fairShares(20, [1, 1])).toEqual([10, 10]);
    expect(fairShares(10, [undefined, undefined, undefined])).toEqual([4, 3, 3]);
  });

  it('counts the Envoys not measured yet as one claimant: quiet newcomers cannot crowd out a measured demand', () => {
    // An Envoy measured at 29.7/s and eight streams that reported once: half of 20 each way, not 20/9.
    const eight = fairShares(20, [29.7, ...Array<undefined>(8).fill(undefined)]);
    expect(eight[0]).toBe(10);
    expect(sum(eight)).toBe(20);
    // 25 of them: the measured Envoy still gets its part, never DENY_ALL while the limit has room.
    const many = fairShares(20, [...Array<undefined>(25).fill(undefined), 29.7]);
    expect(many[25]).toBe(10);
    expect(sum(many)).toBe(20);
  });

  it('gives the measured streams of one client one fair part together, split by their demands', () => {
    const s = fairShares(20, [30, 30, 30, 30, 4], ['a', 'b', 'b', 'b', 'b']);
    expect(s[0]).toBe(10);
    expect(s.slice(1).reduce((x, y) => x + y, 0)).toBe(10);
    expect(s[4]).toBeLessThanOrEqual(s[1]!);
  });

  it('rounds no measured demand to 0 while another Envoy holds more than one token', () => {
    const s = fairShares(5, [30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30]);
    expect(s.filter((x) => x > 0)).toHaveLength(5);
    const t = fairShares(5, [30, undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(t[0]).toBeGreaterThan(0);
    expect(sum(t)).toBe(5);
  });

  it('never exceeds the limit, for any demands; shares of 0 when there are more Envoys than tokens', () => {
    for (let n = 1; n <= 30; n++) {
      for (const limit of [0, 1, 7, 20, 1000]) {
        const demands = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? undefined : (i * 7) % 50));
        const s = fairShares(limit, demands);
        expect(s).toHaveLength(n);
        expect(sum(s)).toBe(limit);
        expect(
          s.filter((x) => !Number.isInteger(x) || x < 0),
          `shares ${JSON.stringify(s)}`,
        ).toEqual([]);
      }
    }
    expect(fairShares(2, [undefined, undefined, undefined]).sort()).toEqual([0, 1, 1]);
  });
});

describe('worthChanging', () => {
  it('ignores drifts within a tenth (or one token), not moves to or from zero', () => {
    expect(worthChanging([10, 10], [11, 9])).toBe(false);
    expect(worthChanging([100, 100], [109, 91])).toBe(false);
    expect(worthChanging([100, 100], [115, 85])).toBe(true);
    expect(worthChanging([1, 0], [0, 1])).toBe(true);
  });
});

describe('capShares', () => {
  it('keeps shares that fit in what the other replicas leave free, scales down whole tokens that do not', () => {
    expect(capShares([10, 5], 20)).toEqual([10, 5]);
    expect(capShares([10, 10], 10)).toEqual([5, 5]);
    expect(capShares([7, 3], 5)).toEqual([4, 1]);
    // Never rounded to 0 while there is a token for it.
    expect(capShares([18, 1, 1], 3)).toEqual([1, 1, 1]);
    expect(capShares([18, 1, 1], 2).filter((x) => x > 0)).toHaveLength(2);
    expect(capShares([20], 0)).toEqual([0]);
    expect(capShares([20], -4)).toEqual([0]);
  });
});
