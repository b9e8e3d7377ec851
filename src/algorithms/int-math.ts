/**
 * Exact integer arithmetic on JavaScript numbers (IEEE doubles), written so that the Lua fragments
 * (Redis 7: Lua 5.1, doubles only, no integer division, no 64-bit bit operations) can do exactly the same
 * steps and reach bit-identical results.
 *
 * Why not BigInt: the Lua side has nothing like it, and the decisions of the memory store and of Redis must
 * agree. Instead every intermediate value is kept an exact integer below 2^53, where doubles are exact.
 *
 * Facts relied on:
 * - For integers 0 <= a, b with a + b < 2^53, Math.floor(a / b) is the exact floor quotient: the correctly
 *   rounded quotient can only round up to the next integer when b * (q + 1) >= 2^53.
 * - Multiplying or dividing by a power of two is exact (no overflow/underflow in our ranges).
 */

/** 2^52: products up to this size are exact and leave room for adding a divisor below 2^36. */
export const TWO_52 = 4_503_599_627_370_496;
/** 2^15: the digit size of the long multiplication in mulDivRem. */
const DIGIT = 32_768;
const TWO_30 = 1_073_741_824;
const TWO_45 = 35_184_372_088_832;

/** Exact floor(a / b) for integers a >= 0, b > 0, a + b < 2^53. */
export function floorDiv(a: number, b: number): number {
  return Math.floor(a / b);
}

/** Exact a mod b for integers a >= 0, b > 0, a + b < 2^53 (written as Lua 5.1 computes `%`). */
export function mod(a: number, b: number): number {
  return a - Math.floor(a / b) * b;
}

/** Exact ceil(a / b) for integers a >= 0, b > 0, a + b < 2^53. */
export function ceilDiv(a: number, b: number): number {
  const q = Math.floor(a / b);
  return q * b === a ? q : q + 1;
}

/**
 * Exact quotient and remainder of (a * b) / c for integers with 0 <= a < 2^36, 0 < c < 2^36,
 * 0 <= b < 2^53, when the quotient is below 2^53. The product itself may be far above 2^53
 * (e.g. a limit of 4e9 times a window of one year in ms is about 1.3e20).
 *
 * Long multiplication in base 2^15: b = d3·2^45 + d2·2^30 + d1·2^15 + d0, and the running value
 * q·c + r is multiplied by 2^15 and added a·d at each step, so r·2^15 + a·d < (a + c)·2^15 < 2^52.
 * Products that are already exact (a·b <= 2^52) take one division.
 */
export function mulDivRem(a: number, b: number, c: number): [q: number, r: number] {
  const p = a * b;
  if (p <= TWO_52) {
    const q = Math.floor(p / c);
    return [q, p - q * c];
  }
  const d3 = Math.floor(b / TWO_45);
  let rest = b - d3 * TWO_45;
  const d2 = Math.floor(rest / TWO_30);
  rest -= d2 * TWO_30;
  const d1 = Math.floor(rest / DIGIT);
  const d0 = rest - d1 * DIGIT;
  let q = 0;
  let r = 0;
  for (const d of [d3, d2, d1, d0]) {
    const s = r * DIGIT + a * d;
    const qs = Math.floor(s / c);
    q = q * DIGIT + qs;
    r = s - qs * c;
  }
  return [q, r];
}

/** Exact floor(a * b / c); same preconditions as mulDivRem. */
export function mulDivFloor(a: number, b: number, c: number): number {
  return mulDivRem(a, b, c)[0];
}

/** Exact ceil(a * b / c); same preconditions as mulDivRem. */
export function mulDivCeil(a: number, b: number, c: number): number {
  const [q, r] = mulDivRem(a, b, c);
  return r > 0 ? q + 1 : q;
}
