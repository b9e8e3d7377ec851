/**
 * Property tests on seeded random traces, for every algorithm:
 * - decisions and remaining equal a brute-force model of the definition;
 * - resetMs is exact: when rejected, retrying after exactly resetMs admits and one ms earlier does not;
 *   when allowed, the quota is whole again after resetMs and not one ms earlier;
 * - dropping the state after its ttlMs changes no decision (ttl is long enough);
 * - the exact algorithms never admit more than their guarantee in any span.
 */
import { describe, expect, it } from 'vitest';
import { getAlgorithm } from '../../../src/algorithms/registry.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { AlgorithmParams } from '../../../src/algorithms/types.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { referenceModel } from './reference-models.js';
import { Driver, prng, wellFormed } from './support.js';

const BUCKETS: readonly AlgorithmName[] = ['token_bucket', 'leaky_bucket'];

interface Step {
  readonly dt: number;
  readonly hits: number;
}

function randomCase(seed: number, name: AlgorithmName): { params: AlgorithmParams; start: number; trace: Step[] } {
  const r = prng(seed);
  const limit = r.next() < 0.05 ? 0 : r.int(1, r.next() < 0.2 ? 1_000 : 12);
  const windowMs = [1, 7, 1_000, 60_000, r.int(2, 5_000)][r.int(0, 4)]!;
  const burst = BUCKETS.includes(name) ? r.int(1, Math.max(1, 2 * limit)) : limit;
  const start = 1_700_000_000_000 + r.int(0, 10_000_000);
  const cap = BUCKETS.includes(name) ? burst : limit;
  const trace: Step[] = [];
  for (let i = 0; i < 250; i++) {
    const u = r.next();
    const dt = u < 0.4 ? 0 : u < 0.9 ? r.int(0, Math.max(1, Math.floor(windowMs / 4))) : r.int(0, 3 * windowMs);
    const v = r.next();
    const hits = v < 0.1 ? 0 : v < 0.75 ? 1 : v < 0.95 ? r.int(1, Math.max(1, cap)) : cap + r.int(1, 3);
    trace.push({ dt, hits });
  }
  return { params: { limit, windowMs, burst }, start, trace };
}

/** The most hits one request can ever be admitted with (L = 0 admits none). */
function capacity(name: AlgorithmName, p: AlgorithmParams): number {
  if (p.limit === 0) return 0;
  return BUCKETS.includes(name) ? p.burst : p.limit;
}

describe.each(ALGORITHM_NAMES)('%s on random traces', (name) => {
  const algorithm = getAlgorithm(name);

  // Failures are collected as text and asserted once: expect() per step would dominate the run time.
  it('agrees with the brute-force model of its definition', () => {
    const failures: string[] = [];
    for (let seed = 1; seed <= 150; seed++) {
      const { params, start, trace } = randomCase(seed, name);
      const clock = new FakeClock(start);
      const d = new Driver(algorithm, params, clock);
      const model = referenceModel(name, params);
      for (const { dt, hits } of trace) {
        clock.advance(dt);
        const o = d.hit(hits);
        const m = model.step(clock.nowMs(), hits);
        const ok =
          wellFormed(o) &&
          o.allowed === m.allowed &&
          o.remainingIfNotCommitted === m.remaining &&
          (!o.allowed || o.remainingIfCommitted === Math.max(0, m.remaining - hits));
        if (!ok) failures.push(`seed ${seed} at ${clock.nowMs()} hits ${hits}: ${JSON.stringify(o)} vs ${JSON.stringify(m)}`);
      }
    }
    expect(failures.slice(0, 3)).toEqual([]);
  });

  it('gives an exact resetMs, rejected or allowed', () => {
    const failures: string[] = [];
    for (let seed = 1000; seed < 1150; seed++) {
      const { params, start, trace } = randomCase(seed, name);
      const clock = new FakeClock(start);
      const d = new Driver(algorithm, params, clock);
      for (const { dt, hits } of trace) {
        clock.advance(dt);
        const now = clock.nowMs();
        const o = d.hit(hits);
        const at = `seed ${seed} at ${now} hits ${hits} reset ${o.resetMs}`;
        if (!o.allowed && hits <= capacity(name, params)) {
          if (o.resetMs <= 0) failures.push(`${at}: no wait`);
          if (!d.peek(hits, now + o.resetMs).allowed) failures.push(`${at}: still rejected after resetMs`);
          if (d.peek(hits, now + o.resetMs - 1).allowed) failures.push(`${at}: admitted 1 ms before resetMs`);
        } else if (!o.allowed) {
          if (o.resetMs <= 0) failures.push(`${at}: never admissible, yet no wait`);
        } else if (hits > 0) {
          const full = capacity(name, params);
          if (d.peek(0, now + o.resetMs).remainingIfNotCommitted !== full) failures.push(`${at}: not whole at reset`);
          if (o.resetMs > 0 && d.peek(0, now + o.resetMs - 1).remainingIfNotCommitted >= full) {
            failures.push(`${at}: whole 1 ms before reset`);
          }
        }
      }
    }
    expect(failures.slice(0, 3)).toEqual([]);
  });

  it('decides the same whether or not the state is dropped after ttlMs', () => {
    const failures: string[] = [];
    for (let seed = 2000; seed < 2100; seed++) {
      const { params, start, trace } = randomCase(seed, name);
      const c1 = new FakeClock(start);
      const c2 = new FakeClock(start);
      const expiring = new Driver(algorithm, params, c1, true);
      const keeping = new Driver(algorithm, params, c2, false);
      for (const { dt, hits } of trace) {
        c1.advance(dt);
        c2.advance(dt);
        const a = JSON.stringify(expiring.hit(hits));
        const b = JSON.stringify(keeping.hit(hits));
        if (a !== b) failures.push(`seed ${seed} at ${c1.nowMs()}: ${a} vs ${b}`);
      }
    }
    expect(failures.slice(0, 3)).toEqual([]);
  });
});

describe('guarantees of the exact algorithms', () => {
  function admissions(name: AlgorithmName, seed: number): { params: AlgorithmParams; admitted: Array<[number, number]> } {
    const { params, start, trace } = randomCase(seed, name);
    const clock = new FakeClock(start);
    const d = new Driver(getAlgorithm(name), params, clock);
    const admitted: Array<[number, number]> = [];
    for (const { dt, hits } of trace) {
      clock.advance(dt);
      if (d.hit(hits).allowed && hits > 0) admitted.push([clock.nowMs(), hits]);
    }
    return { params, admitted };
  }

  it('fixed_window and sliding_window_counter: at most L per epoch-aligned window', () => {
    for (const name of ['fixed_window', 'sliding_window_counter'] as const) {
      for (let seed = 1; seed <= 150; seed++) {
        const { params, admitted } = admissions(name, seed);
        const perWindow = new Map<number, number>();
        for (const [t, n] of admitted) {
          const w = Math.floor(t / params.windowMs);
          perWindow.set(w, (perWindow.get(w) ?? 0) + n);
        }
        expect(Math.max(0, ...perWindow.values())).toBeLessThanOrEqual(params.limit);
      }
    }
  });

  it('sliding_window_log: at most L in any span of W ms', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const { params, admitted } = admissions('sliding_window_log', seed);
      let worst = 0;
      for (const [t] of admitted) {
        const inSpan = admitted.filter(([u]) => u > t - params.windowMs && u <= t).reduce((a, [, n]) => a + n, 0);
        worst = Math.max(worst, inSpan);
      }
      expect(worst).toBeLessThanOrEqual(params.limit);
    }
  });

  it('token_bucket and leaky_bucket: at most burst + L·t/W in any span of t ms', () => {
    for (const name of BUCKETS) {
      for (let seed = 1; seed <= 150; seed++) {
        const { params, admitted } = admissions(name, seed);
        let excess = -Infinity; // max over spans of admitted·W − (burst·W + L·span); must stay <= 0
        for (let i = 0; i < admitted.length; i++) {
          let sum = 0;
          for (let j = i; j < admitted.length; j++) {
            sum += admitted[j]![1];
            const span = admitted[j]![0] - admitted[i]![0];
            excess = Math.max(excess, sum * params.windowMs - (params.burst * params.windowMs + params.limit * span));
          }
        }
        expect({ seed, excess: Math.max(excess, 0) }).toEqual({ seed, excess: 0 });
      }
    }
  });
});
