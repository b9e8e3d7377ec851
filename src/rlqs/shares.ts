/**
 * Splitting one bucket's global limit among the Envoys that report it: max-min fair by demand
 * (water-filling), in whole tokens, never more than the limit in total.
 *
 * - Envoys whose demand is not measured yet (they just joined, or never reported a second time) are one
 *   claimant together: they share one fair part, whatever their number. A newcomer gets an even part at once
 *   (the others shrink when it joins), and streams that report once and stay quiet cannot crowd out the
 *   Envoys whose demand is measured. Measured streams of one client (address) are one claimant too.
 * - Demand is padded (HEADROOM, plus one) so that an Envoy with a steady load is not held just under it.
 * - What nobody wants is handed out evenly, so a growing load finds room before its next report.
 * - Whole tokens by largest remainder: the shares add up to exactly floor(limit) when demand fills it, and an
 *   Envoy with a measured demand is not rounded to 0 while another holds more than one token (or an
 *   unmeasured one holds any).
 */

/** Demand is padded by this factor before it is compared (a load measured at 4/s asks for 5.4). */
export const HEADROOM = 1.1;

/**
 * `demands[i]`: requests per fill interval wanted by Envoy i (undefined = not measured yet); `clients[i]`: the
 * client (address) it reports from, when known. Measured Envoys of one client are one claimant: a client
 * gets one fair part however many streams it opens, split among them by demand. Returns the whole-token
 * shares, in the same order; their sum ≤ `limit`.
 */
export function fairShares(limit: number, demands: readonly (number | undefined)[], clients?: readonly (string | undefined)[]): number[] {
  const n = demands.length;
  if (n === 0) return [];
  const total = Math.max(0, Math.floor(limit));
  const want = demands.map((d) => (d === undefined ? Number.POSITIVE_INFINITY : d * HEADROOM + 1));
  // Claimants: the unmeasured Envoys together, each client's measured ones, each other measured Envoy.
  const members = new Map<string, number[]>();
  demands.forEach((d, i) => {
    const key = d === undefined ? 'pool' : clients?.[i] !== undefined ? `client ${clients[i]}` : `own ${i}`;
    const list = members.get(key);
    if (list === undefined) members.set(key, [i]);
    else list.push(i);
  });
  const groups = [...members.values()];
  const parts = waterFill(
    total,
    groups.map((g) => g.reduce((sum, i) => sum + want[i]!, 0)),
  );
  const exact = new Array<number>(n).fill(0);
  groups.forEach((g, k) => {
    const inner = waterFill(
      parts[k]!,
      g.map((i) => want[i]!),
    );
    g.forEach((i, q) => (exact[i] = inner[q]!));
  });
  return wholeTokens(
    exact,
    total,
    demands.map((d) => d !== undefined),
  );
}

/**
 * Max-min fair parts of `total` for these wants (water-filling); what nobody wants is spread evenly (a demand
 * may grow before its next report), so the parts add up to `total`.
 */
function waterFill(total: number, want: readonly number[]): number[] {
  const order = want.map((_, i) => i).sort((a, b) => want[a]! - want[b]!);
  const part = new Array<number>(want.length).fill(0);
  let left = total;
  for (let k = 0; k < want.length; k++) {
    const i = order[k]!;
    part[i] = Math.min(want[i]!, left / (want.length - k));
    left -= part[i];
  }
  if (left > 0) for (let i = 0; i < part.length; i++) part[i]! += left / part.length;
  return part;
}

/**
 * `exact` rounded to whole tokens adding up to at most `total` (exactly, when `exact` adds up to it): floors,
 * then the spare tokens by largest remainder (`first` holders ahead on a tie). A `first` holder with a part
 * above 0 rounded to 0 is then given a token from the largest share above one, or from a holder not `first`.
 */
function wholeTokens(exact: readonly number[], total: number, first: readonly boolean[]): number[] {
  const shares = exact.map((x) => Math.floor(x + 1e-9));
  let spare = Math.min(total, Math.round(exact.reduce((a, b) => a + b, 0) + 1e-9)) - shares.reduce((a, b) => a + b, 0);
  const byRemainder = exact.map((x, i) => ({ i, r: x - shares[i]! })).sort((a, b) => b.r - a.r || Number(first[b.i]) - Number(first[a.i]) || a.i - b.i);
  for (const { i } of byRemainder) {
    if (spare <= 0) break;
    shares[i]! += 1;
    spare--;
  }
  for (let i = 0; i < shares.length; i++) {
    if (!first[i] || shares[i]! > 0 || exact[i]! <= 0) continue;
    let donor = -1;
    for (let j = 0; j < shares.length; j++) {
      const better = donor < 0 || shares[j]! > shares[donor]! || (shares[j] === shares[donor] && !first[j]);
      if ((shares[j]! > 1 || (shares[j]! === 1 && !first[j])) && better) donor = j;
    }
    if (donor < 0) break;
    shares[donor]! -= 1;
    shares[i] = 1;
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
 * do not hold); unchanged when they fit. A share above 0 is kept above 0 while `free` has a token for it.
 */
export function capShares(shares: readonly number[], free: number): number[] {
  const room = Math.max(0, Math.floor(free));
  const sum = shares.reduce((a, b) => a + b, 0);
  if (sum <= room) return [...shares];
  return wholeTokens(
    shares.map((x) => (x * room) / sum),
    room,
    shares.map((x) => x > 0),
  );
}
