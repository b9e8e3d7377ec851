/**
 * Splitting one bucket's global limit among the Envoys that report it: max-min fair by demand
 * (water-filling), in whole tokens, never more than the limit in total.
 *
 * - An Envoy whose demand is not measured yet (it just joined) wants "everything": it gets an equal share
 *   of what the measured ones leave, so the others shrink at once when it joins.
 * - Demand is padded (HEADROOM, plus one) so that an Envoy with a steady load is not held just under it.
 * - What nobody wants is handed out evenly, so a growing load finds room before its next report.
 * - Whole tokens by largest remainder: the shares add up to exactly floor(limit) when demand fills it.
 */

/** Demand is padded by this factor before it is compared (a load measured at 4/s asks for 5.4). */
export const HEADROOM = 1.1;

/**
 * `demands[i]`: requests per fill interval wanted by Envoy i (undefined = unknown, wants all). Returns the
 * whole-token shares, in the same order; their sum ≤ `limit`.
 */
export function fairShares(limit: number, demands: readonly (number | undefined)[]): number[] {
  const n = demands.length;
  if (n === 0) return [];
  const total = Math.max(0, Math.floor(limit));
  const want = demands.map((d) => (d === undefined ? Number.POSITIVE_INFINITY : d * HEADROOM + 1));
  const order = want.map((_, i) => i).sort((a, b) => want[a]! - want[b]!);
  const exact = new Array<number>(n).fill(0);
  let left = total;
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    const even = left / (n - k);
    exact[i] = Math.min(want[i]!, even);
    left -= exact[i];
  }
  // Nobody wants the rest: spread it evenly (a demand may grow before its next report).
  if (left > 0) for (let i = 0; i < n; i++) exact[i]! += left / n;
  const shares = exact.map((x) => Math.floor(x + 1e-9));
  let spare = total - shares.reduce((a, b) => a + b, 0);
  const byRemainder = exact.map((x, i) => ({ i, r: x - shares[i]! })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const { i } of byRemainder) {
    if (spare <= 0) break;
    shares[i]! += 1;
    spare--;
  }
  return shares;
}

/**
 * Whether new shares differ enough from the current ones to hand them out (every change gives that Envoy
 * a fresh, full token bucket, so small drifts are not worth it): some share moved by more than a tenth
 * (and more than one token), or went to or from zero.
 */
export function worthChanging(current: readonly number[], next: readonly number[]): boolean {
  for (let i = 0; i < current.length; i++) {
    const a = current[i]!;
    const b = next[i]!;
    if ((a === 0) !== (b === 0)) return true;
    if (Math.abs(a - b) > Math.max(1, a * 0.1)) return true;
  }
  return false;
}

/**
 * `shares` scaled down (in whole tokens) so that they add up to at most `free` (what the other replicas' Envoys
 * do not hold); unchanged when they fit.
 */
export function capShares(shares: readonly number[], free: number): number[] {
  const room = Math.max(0, Math.floor(free));
  const sum = shares.reduce((a, b) => a + b, 0);
  if (sum <= room) return [...shares];
  return shares.map((x) => Math.floor((x * room) / sum));
}
