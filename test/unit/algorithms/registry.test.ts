import { describe, expect, it } from 'vitest';
import { getAlgorithm, paramsError } from '../../../src/algorithms/registry.js';
import { ALGORITHM_NAMES, PARAM_BOUNDS, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';

describe('algorithm registry', () => {
  it('has a module for every name, answering to that name', () => {
    for (const name of ALGORITHM_NAMES) expect(getAlgorithm(name).name).toBe(name);
  });

  it('throws for a name outside the catalogue', () => {
    expect(() => getAlgorithm('leaky' as AlgorithmName)).toThrow(/unknown rate-limit algorithm 'leaky'/);
  });

  it('accepts parameters inside the exact range and names the field that is not', () => {
    const ok = { limit: 100, windowMs: 60_000, burst: 20 };
    for (const name of ALGORITHM_NAMES) expect(paramsError(name, ok)).toBeUndefined();
    expect(paramsError('fixed_window', { ...ok, limit: 0 })).toBeUndefined();
    expect(paramsError('fixed_window', { ...ok, limit: PARAM_BOUNDS.maxLimit + 1 })).toMatch(/^requests_per_unit/);
    expect(paramsError('fixed_window', { ...ok, limit: 1.5 })).toMatch(/^requests_per_unit/);
    expect(paramsError('sliding_window_log', { ...ok, windowMs: 0 })).toMatch(/^window/);
    expect(paramsError('sliding_window_log', { ...ok, windowMs: PARAM_BOUNDS.maxWindowMs + 1 })).toMatch(/^window/);
    expect(paramsError('token_bucket', { ...ok, burst: 0 })).toMatch(/^burst must/);
    expect(paramsError('fixed_window', { ...ok, burst: 0 })).toBeUndefined(); // window algorithms ignore burst
    // 4e9 tokens refilled at 1 per year would take 4e9 years to refill
    expect(paramsError('leaky_bucket', { limit: 1, windowMs: 31_536_000_000, burst: 4_000_000_000 })).toMatch(/refill/);
    expect(paramsError('token_bucket', { limit: 1, windowMs: 31_536_000_000, burst: 8_000 })).toBeUndefined();
  });
});
