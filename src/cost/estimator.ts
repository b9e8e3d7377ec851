/**
 * The cost estimator of admission by predicted cost: per rule, the mean actual cost of the requests settled in
 * the last `window`, from a ring of SLOTS sub-window sums and counts. Memory per rule is fixed (three arrays of
 * SLOTS numbers) and the number of rules kept is bounded (MAX_RULES, the least recently created dropped first).
 *
 * The window moves a slot (a tenth of it) at a time: a settled cost counts for between 9/10 and all of the
 * window. Each settled cost is taken in clipped to the rule's `clip`, so one huge cost moves the mean by at most
 * clip / n. A prediction is a whole number of at least 1: the mean rounded up, or `initial` while no settled
 * cost is in the window.
 *
 * The estimator lives in the process: each replica learns from the settlements it receives. Envoy spreads
 * settlements over the replicas like any other call, so every replica samples the same costs, and a replica's
 * prediction follows the traffic of the last window: replicas converge within one window of settled traffic.
 */
import type { PredictCost } from '../vocab/predict-cost.js';

export const SLOTS = 10;
/** Rules kept at once; a reload that renames rules leaves the old ones here until pushed out. */
export const MAX_RULES = 10_000;

interface Ring {
  readonly slotMs: number;
  /** Slot number (floor(now / slotMs)) each slot was last written in. */
  readonly epochs: Float64Array;
  readonly sums: Float64Array;
  readonly counts: Float64Array;
}

/** What the estimator holds for one rule, for `/json`, `ratelimit query` and /rules-like reports. */
export interface CostReading {
  readonly prediction: number;
  /** Settled costs in the window (0: the prediction is `initial`). */
  readonly settled: number;
}

export class CostEstimator {
  private readonly rings = new Map<string, Ring>();

  /** The prediction for the rule `key` at `nowMs`. */
  predict(key: string, spec: PredictCost, nowMs: number): number {
    return this.read(key, spec, nowMs).prediction;
  }

  read(key: string, spec: PredictCost, nowMs: number): CostReading {
    const ring = this.rings.get(ringKey(key, spec));
    if (ring === undefined) return { prediction: spec.initial, settled: 0 };
    const now = Math.floor(nowMs / ring.slotMs);
    let sum = 0;
    let count = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (now - ring.epochs[i]! >= SLOTS || ring.epochs[i]! > now) continue;
      sum += ring.sums[i]!;
      count += ring.counts[i]!;
    }
    if (count === 0) return { prediction: spec.initial, settled: 0 };
    return { prediction: Math.max(1, Math.ceil(sum / count)), settled: count };
  }

  /** Takes in one settled cost (clipped to the rule's `clip`). */
  observe(key: string, spec: PredictCost, cost: number, nowMs: number): void {
    const id = ringKey(key, spec);
    let ring = this.rings.get(id);
    if (ring === undefined) {
      if (this.rings.size >= MAX_RULES) this.rings.delete(this.rings.keys().next().value!);
      const epochs = new Float64Array(SLOTS).fill(-Infinity);
      ring = { slotMs: Math.max(1, Math.ceil(spec.windowMs / SLOTS)), epochs, sums: new Float64Array(SLOTS), counts: new Float64Array(SLOTS) };
      this.rings.set(id, ring);
    }
    const now = Math.floor(nowMs / ring.slotMs);
    const slot = ((now % SLOTS) + SLOTS) % SLOTS;
    if (ring.epochs[slot] !== now) {
      ring.epochs[slot] = now;
      ring.sums[slot] = 0;
      ring.counts[slot] = 0;
    }
    ring.sums[slot] = ring.sums[slot]! + Math.min(Math.max(0, cost), spec.clip);
    ring.counts[slot] = ring.counts[slot]! + 1;
  }

  /** Rules held (for tests of the bound). */
  get size(): number {
    return this.rings.size;
  }
}

/** A rule's ring is also keyed by its window, so a reload that changes the window starts afresh. */
function ringKey(key: string, spec: PredictCost): string {
  return `${key}\0${spec.windowMs}`;
}
