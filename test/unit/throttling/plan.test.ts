/** The engine's seam into throttling: ceilings, criticality classes, percentages. */
import { describe, expect, it } from 'vitest';
import type { CompiledLimit } from '../../../src/config/types.js';
import { parsePercent } from '../../../src/config/validate/validate-throttling.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { classify } from '../../../src/throttling/criticality.js';
import { planCheck, reportedRemaining } from '../../../src/throttling/plan.js';
import { formatPpm, scalePpm } from '../../../src/vocab/throttling.js';
import { prng } from '../../support/prng.js';

const base = (algorithm: LimitCheck['algorithm'], limit: number, burst = limit): LimitCheck => ({
  key: 'k',
  algorithm,
  limit,
  windowMs: 60_000,
  burst,
  hits: 1,
  enforce: true,
});
const compiled = (extra: Partial<CompiledLimit>, algorithm: CompiledLimit['algorithm'] = 'fixed_window', rpu = 100): CompiledLimit => ({
  requestsPerUnit: rpu,
  windowMs: 60_000,
  unit: 'minute',
  algorithm,
  burst: rpu,
  softRequestsPerUnit: 0,
  ...extra,
});
const ctx = (criticality: 'critical' | 'default' | 'sheddable' = 'default') => ({ keyPrefix: 'p:', domain: 'd', ruleStatsKey: 'd.k', criticality });

describe('scalePpm', () => {
  it('is the exact floor of value × ppm / 10^6 up to the largest limit', () => {
    const random = prng('scale-ppm');
    for (let i = 0; i < 20_000; i++) {
      const value = random.chance(0.5) ? random.int(0, 1000) : random.int(0, 4_294_967_295);
      const ppm = random.int(1, 1_000_000);
      expect(scalePpm(value, ppm)).toBe(Number((BigInt(value) * BigInt(ppm)) / 1_000_000n));
    }
  });
  it('formats and parses percentages both ways', () => {
    for (const text of ['10%', '12.5%', '0.0001%', '100%', '33.3333%']) expect(formatPpm(parsePercent(text)!)).toBe(text);
    expect(parsePercent('10')).toBeUndefined();
    expect(parsePercent('12.34567%')).toBeUndefined();
  });
});

describe('planCheck', () => {
  it('leaves a limit without throttling fields untouched (the same object)', () => {
    const c = base('fixed_window', 100);
    expect(planCheck(c, compiled({}), ctx())).toBe(c);
  });
  it('soft: the ceiling floor(L × (1 + p)), scaled by the class share', () => {
    expect(planCheck(base('fixed_window', 100), compiled({ throttling: { mode: 'soft', ppm: 100_000 } }), ctx()).limit).toBe(110);
    expect(planCheck(base('fixed_window', 7), compiled({ throttling: { mode: 'soft', ppm: 100_000 } }, 'fixed_window', 7), ctx()).limit).toBe(7);
    const shares = { critical: 1_000_000, default: 800_000, sheddable: 500_000 };
    expect(planCheck(base('sliding_window_log', 100), compiled({ throttling: { mode: 'soft', ppm: 100_000 }, shares }), ctx('sheddable')).limit).toBe(55);
  });
  it('shares: window limit, token_bucket burst, leaky_bucket tolerance', () => {
    const shares = { critical: 1_000_000, default: 800_000, sheddable: 500_000 };
    expect(planCheck(base('sliding_window_counter', 100), compiled({ shares }), ctx('default')).limit).toBe(80);
    expect(planCheck(base('token_bucket', 100, 40), compiled({ shares }, 'token_bucket'), ctx('sheddable'))).toMatchObject({ limit: 100, burst: 20 });
    expect(planCheck(base('leaky_bucket', 100, 1), compiled({ shares }, 'leaky_bucket'), ctx('sheddable'))).toMatchObject({ limit: 100, burst: 1 });
    expect(planCheck(base('leaky_bucket', 100, 11), compiled({ shares }, 'leaky_bucket'), ctx('sheddable'))).toMatchObject({ burst: 6 });
  });
  it('elastic and ban: fields with keys beside the counter (ban) and per rule (aggregate)', () => {
    const p = planCheck(
      { ...base('fixed_window', 10), key: 'p:{d|k=v}:fixed_window:60000' },
      compiled({ throttling: { mode: 'elastic', capacity: 40, max: 15 }, banMs: 3_600_000 }, 'fixed_window', 10),
      ctx(),
    );
    expect(p.elastic).toEqual({ max: 15, capacity: 40, key: 'p:{%elastic|d|d.k}:fixed_window:60000' });
    expect(p.ban).toEqual({ ms: 3_600_000, key: 'p:{d|k=v}:fixed_window:60000:ban' });
    // a sliding_window_log rule's aggregate is a sliding_window_counter (constant memory)
    const log = planCheck(
      base('sliding_window_log', 10),
      compiled({ throttling: { mode: 'elastic', capacity: 40, max: 15 } }, 'sliding_window_log', 10),
      ctx(),
    );
    expect(log.elastic).toEqual({ max: 15, capacity: 40, key: 'p:{%elastic|d|d.k}:sliding_window_counter:60000', algorithm: 'sliding_window_counter' });
  });
  it('reports remaining against L, not against the soft ceiling', () => {
    const limit = compiled({ throttling: { mode: 'soft', ppm: 100_000 } });
    const planned = planCheck(base('fixed_window', 100), limit, ctx());
    expect(reportedRemaining(planned, limit, 60)).toBe(50);
    expect(reportedRemaining(planned, limit, 4)).toBe(0);
  });
});

describe('classify', () => {
  const req = (...descriptors: [string, string][][]) => ({
    domain: 'd',
    hitsAddend: 0,
    descriptors: descriptors.map((d) => ({ entries: d.map(([key, value]) => ({ key, value })) })),
  });
  it('removes the criticality entries and takes the first class, in any case; unknown or missing is default', () => {
    const c = classify(
      req(
        [
          ['user', 'a'],
          ['criticality', 'SHEDDABLE'],
        ],
        [
          ['criticality', 'critical'],
          ['path', '/'],
        ],
      ),
      'criticality',
    );
    expect(c.criticality).toBe('sheddable');
    expect(c.request.descriptors.map((d) => d.entries.map((e) => e.key))).toEqual([['user'], ['path']]);
    expect(classify(req([['criticality', 'urgent']]), 'criticality').criticality).toBe('default');
    const untouched = req([['user', 'a']]);
    expect(classify(untouched, 'criticality')).toEqual({ request: untouched, criticality: 'default' });
    expect(classify(req([['prio', 'critical']]), 'prio').criticality).toBe('critical');
  });
});
