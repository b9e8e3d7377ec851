/**
 * The vocabulary of throttling (docs/throttling.md): how a limit behaves above L (hard, soft, elastic), the
 * rate-based ban, and the criticality shares. Config compiles to these; the engine turns them into the integer
 * fields of a store check (throttling/plan.ts); the stores act on those integers only (storage/throttling-step.ts,
 * storage/redis/lua/throttling).
 *
 * Percentages are kept as integer parts per million (80% = 800 000) so every ceiling is exact integer arithmetic.
 */

export const PPM = 1_000_000;

/** `throttling:` of a limit. Absent on a CompiledLimit means hard. */
export type Throttling =
  | { readonly mode: 'soft'; /** p in ppm: admitted while count + hits <= floor(L × (1 + p)). */ readonly ppm: number }
  | {
      readonly mode: 'elastic';
      /** N: the rule's aggregate use, by all its clients in the window, that borrowing may not pass. */
      readonly capacity: number;
      /** M > L: the most one client may be admitted in a window while borrowing. */
      readonly max: number;
    };

export const CRITICALITY_CLASSES = ['critical', 'default', 'sheddable'] as const;
export type Criticality = (typeof CRITICALITY_CLASSES)[number];

/** `shares:` of a limit: how much of it each class may fill, in ppm (0, 1 000 000]. */
export type Shares = Readonly<Record<Criticality, number>>;

/** Shares when none are configured: every class may fill the whole limit. */
export const FULL_SHARES: Shares = Object.freeze({ critical: PPM, default: PPM, sheddable: PPM });

/** floor(value × ppm / 1e6), exact for value < 2^32 and ppm <= 2e6 (the product stays below 2^53). */
export function scalePpm(value: number, ppm: number): number {
  const product = value * ppm;
  let q = Math.floor(product / PPM);
  // The division is rounded; correct it to the exact floor.
  if (q * PPM > product) q--;
  else if ((q + 1) * PPM <= product) q++;
  return q;
}

/** `12.5%` ← 125 000 ppm: the shortest decimal spelling of a percentage, for /rules and headers. */
export function formatPpm(ppm: number): string {
  const whole = Math.floor(ppm / 10_000);
  const rest = ppm % 10_000;
  return rest === 0 ? `${whole}%` : `${whole}.${String(rest).padStart(4, '0').replace(/0+$/, '')}%`;
}
