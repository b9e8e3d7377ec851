/** What the memory store tests share: a minute-aligned start and a fixed_window check builder. */
import type { LimitCheck } from '../../../src/storage/counter-store.js';

export const T0 = 1_700_000_040_000; // a minute boundary
export const MINUTE = 60_000;

export function check(key: string, limit: number, extra: Partial<LimitCheck> = {}): LimitCheck {
  return { key, algorithm: 'fixed_window', limit, windowMs: MINUTE, burst: limit, hits: 1, enforce: true, ...extra };
}
