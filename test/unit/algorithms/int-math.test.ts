import { describe, expect, it } from 'vitest';
import { ceilDiv, floorDiv, mod, mulDivCeil, mulDivFloor, mulDivRem } from '../../../src/algorithms/int-math.js';
import { prng } from './support.js';

function big(a: number, b: number, c: number): [number, number] {
  const p = BigInt(a) * BigInt(b);
  return [Number(p / BigInt(c)), Number(p % BigInt(c))];
}

describe('int-math', () => {
  it('floorDiv, mod and ceilDiv are exact on integers', () => {
    expect(floorDiv(1_700_000_000_123, 60_000)).toBe(28_333_333);
    expect(mod(1_700_000_000_123, 60_000)).toBe(20_123);
    expect(ceilDiv(10, 5)).toBe(2);
    expect(ceilDiv(11, 5)).toBe(3);
    expect(ceilDiv(0, 7)).toBe(0);
    // 2^53 − 2 over 3: a naive floating division rounds this up to the next integer only past 2^53.
    expect(floorDiv(9_007_199_254_740_990, 3)).toBe(3_002_399_751_580_330);
  });

  it('mulDivRem matches BigInt where the product passes 2^53', () => {
    // 4e9 requests per year: the product is about 1.3e20.
    expect(mulDivRem(31_536_000_000, 4_000_000_000, 31_536_000_000)).toEqual([4_000_000_000, 0]);
    expect(mulDivRem(34_359_738_367, 9_007_199_254_740_991, 34_359_738_368)).toEqual(big(34_359_738_367, 9_007_199_254_740_991, 34_359_738_368));
    const rnd = prng(42);
    const pick = (bits: number): number => Math.floor(rnd.next() * 2 ** rnd.int(0, bits));
    for (let i = 0; i < 20_000; i++) {
      const a = pick(36);
      const c = Math.max(1, pick(36));
      // keep the quotient below 2^53
      const b = Math.min(pick(53), Math.floor((2 ** 53 - 1) / Math.max(1, a)) * c, 2 ** 53 - 1);
      expect(mulDivRem(a, b, c)).toEqual(big(a, b, c));
    }
  });

  it('mulDivFloor and mulDivCeil round the exact quotient', () => {
    expect(mulDivFloor(7, 10, 4)).toBe(17);
    expect(mulDivCeil(7, 10, 4)).toBe(18);
    expect(mulDivCeil(8, 10, 4)).toBe(20);
    expect(mulDivCeil(34_359_738_367, 4_294_967_295, 34_359_738_368)).toBe(Number((34_359_738_367n * 4_294_967_295n + 34_359_738_367n) / 34_359_738_368n));
  });
});
