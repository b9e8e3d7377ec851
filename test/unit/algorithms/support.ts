/** Test helpers for the algorithm suites: a seeded PRNG and a driver that commits like a store does. */
import type { FakeClock } from '../../../src/vocab/clock.js';
import type { Algorithm, AlgorithmOutcome, AlgorithmParams } from '../../../src/algorithms/types.js';

/** mulberry32: a tiny deterministic PRNG, so property tests replay the same traces on every run. */
export function prng(seed: number): { next(): number; int(lo: number, hi: number): number } {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}

/**
 * One key's state driven by a clock: `hit` evaluates and, like a store with a single check, commits when
 * allowed with hits > 0 (and drops the state once its ttl has passed, as the stores do).
 */
export class Driver<S> {
  state: S | undefined;
  private expiresAt = 0;
  constructor(
    private readonly algorithm: Algorithm<S>,
    readonly params: AlgorithmParams,
    readonly clock: FakeClock,
    /** False: keep the state forever (to check that expiring it after ttlMs changes no decision). */
    private readonly expire = true,
  ) {}

  peek(hits: number, atMs = this.clock.nowMs()): AlgorithmOutcome {
    return this.algorithm.evaluate(this.live(atMs), atMs, this.params, hits).outcome;
  }

  hit(hits = 1): AlgorithmOutcome {
    const now = this.clock.nowMs();
    const { outcome, next, ttlMs } = this.algorithm.evaluate(this.live(now), now, this.params, hits);
    // a plain check, not expect(): property tests call this hundreds of thousands of times
    if (!Number.isInteger(ttlMs) || ttlMs < 1) throw new Error(`bad ttlMs ${ttlMs} at ${now}`);
    if (outcome.allowed && hits > 0) {
      this.state = next;
      this.expiresAt = now + ttlMs;
    }
    return outcome;
  }

  private live(now: number): S | undefined {
    return !this.expire || now < this.expiresAt ? this.state : undefined;
  }
}

/** The shape every outcome must have: integers >= 0. */
export function wellFormed(o: AlgorithmOutcome): boolean {
  return [o.remainingIfCommitted, o.remainingIfNotCommitted, o.resetMs].every((v) => Number.isInteger(v) && v >= 0);
}
