/**
 * Brute-force reference models for the property tests: each algorithm's definition written the
 * obvious way (full hit lists, BigInt tokens), independent of the exact-integer tricks under test.
 */
import type { AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { AlgorithmParams } from '../../../src/algorithms/types.js';

export interface Model {
  /** allowed and the quota left as the state stands, at `now`, for `hits`; commits when allowed and hits > 0. */
  step(now: number, hits: number): { allowed: boolean; remaining: number };
}

function fixedWindow(p: AlgorithmParams): Model {
  const counts = new Map<number, number>();
  return {
    step(now, hits) {
      const start = Math.floor(now / p.windowMs) * p.windowMs;
      const count = counts.get(start) ?? 0;
      const allowed = count + hits <= p.limit;
      if (allowed) counts.set(start, count + hits);
      return { allowed, remaining: Math.max(0, p.limit - count) };
    },
  };
}

function slidingLog(p: AlgorithmParams): Model {
  const log: Array<[number, number]> = [];
  return {
    step(now, hits) {
      const count = log.filter(([t]) => t > now - p.windowMs).reduce((a, [, n]) => a + n, 0);
      const allowed = count + hits <= p.limit;
      if (allowed && hits > 0) log.push([now, hits]);
      return { allowed, remaining: Math.max(0, p.limit - count) };
    },
  };
}

function slidingCounter(p: AlgorithmParams): Model {
  const counts = new Map<number, number>();
  const W = BigInt(p.windowMs);
  return {
    step(now, hits) {
      const start = Math.floor(now / p.windowMs) * p.windowMs;
      const cur = counts.get(start) ?? 0;
      const prev = BigInt(counts.get(start - p.windowMs) ?? 0);
      const estimate = cur + Number((prev * (W - BigInt(now - start))) / W);
      const allowed = estimate + hits <= p.limit;
      if (allowed) counts.set(start, cur + hits);
      return { allowed, remaining: Math.max(0, p.limit - estimate) };
    },
  };
}

/** Tokens × W as a BigInt: refill is exactly L per ms in these units, capacity B × W. */
function bucket(p: AlgorithmParams): Model {
  const W = BigInt(p.windowMs);
  const cap = BigInt(p.burst) * W;
  let scaled = cap;
  let last: number | undefined;
  return {
    step(now, hits) {
      if (last !== undefined && now > last) {
        scaled += BigInt(p.limit) * BigInt(now - last);
        if (scaled > cap) scaled = cap;
      }
      if (last === undefined || now > last) last = now;
      if (p.limit === 0) return { allowed: hits === 0, remaining: 0 };
      const allowed = scaled >= BigInt(hits) * W;
      const remaining = Number(scaled / W);
      if (allowed) scaled -= BigInt(hits) * W;
      return { allowed, remaining };
    },
  };
}

export function referenceModel(name: AlgorithmName, params: AlgorithmParams): Model {
  switch (name) {
    case 'fixed_window':
      return fixedWindow(params);
    case 'sliding_window_log':
      return slidingLog(params);
    case 'sliding_window_counter':
      return slidingCounter(params);
    case 'token_bucket':
    case 'leaky_bucket':
      return bucket(params);
  }
}
