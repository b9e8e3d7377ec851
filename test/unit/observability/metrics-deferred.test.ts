/**
 * The per-descriptor and per-decision counters are added up on the request path and handed to prom-client
 * when read (src/observability/metrics-pending.ts): every read (a scrape, or a counter's get()) must see every report
 * made before it, across reloads that keep, remove and re-add series, and past the detailed-series cap.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.js';
import type { DescriptorReport } from '../../../src/core/observer.js';

const report = (statsKey: string, hits: number, over = false, more: Partial<DescriptorReport> = {}): DescriptorReport => ({
  domain: 'd',
  statsKey,
  hits,
  overLimit: over,
  nearLimit: false,
  shadowMode: false,
  quotaMode: false,
  ...more,
});

async function values(m: ReturnType<typeof createMetrics>, name: string): Promise<Record<string, number>> {
  const metric = m.registry.getSingleMetric(name)!;
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) out[Object.values(v.labels).join('/')] = v.value;
  return out;
}

describe('deferred metric counts', () => {
  it('are exact at every read, in the text exposition as in get()', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.setRules({ version: 'v1', domains: [{ name: 'd', statsKeys: ['d.a', 'd.b'] }] });
    const { observer } = m;
    let a = 0;
    let over = 0;
    for (let i = 1; i <= 50; i++) {
      observer.onDescriptor(report('d.a', i, i % 7 === 0, { nearLimit: i % 3 === 0, shadowMode: i % 5 === 0, quotaMode: i % 11 === 0 }));
      observer.onDecision('d', i % 7 === 0, 0.1);
      a += i;
      if (i % 7 === 0) over += i;
      if (i % 10 === 0) {
        expect(await values(m, 'ratelimit_hits_total')).toEqual({ 'd/d.a': a, 'd/d.b': 0 });
        expect(await values(m, 'ratelimit_over_limit_total')).toMatchObject({ 'd/d.a': over });
        expect(await values(m, 'ratelimit_within_limit_total')).toMatchObject({ 'd/d.a': a - over });
        expect(await values(m, 'ratelimit_decisions_total')).toMatchObject({ 'd/OK': i - Math.floor(i / 7), 'd/OVER_LIMIT': Math.floor(i / 7) });
      }
    }
    const text = await m.registry.metrics();
    expect(text).toContain(`ratelimit_hits_total{domain="d",key="d.a"} ${a}`);
    expect(text).toContain(
      `ratelimit_near_limit_total{domain="d",key="d.a"} ${[...Array(50).keys()]
        .map((k) => k + 1)
        .filter((i) => i % 3 === 0)
        .reduce((x, y) => x + y, 0)}`,
    );
    expect(text).toContain(`ratelimit_shadow_mode_total{domain="d",key="d.a"} ${[5, 10, 15, 20, 25, 30, 35, 40, 45, 50].reduce((x, y) => x + y, 0)}`);
    expect(text).toContain(`ratelimit_quota_mode_total{domain="d",key="d.a"} ${[11, 22, 33, 44].reduce((x, y) => x + y, 0)}`);
    expect(text).toContain('ratelimit_decisions_total{domain="unknown",code="OK"} 0');
  });

  it('keep the counts of kept series over a reload, drop removed series, and count a re-added one from zero', async () => {
    const m = createMetrics({ defaultMetrics: false });
    m.setRules({ version: 'v1', domains: [{ name: 'd', statsKeys: ['d.a', 'd.b'] }] });
    m.observer.onDescriptor(report('d.a', 3));
    m.observer.onDescriptor(report('d.b', 4)); // not read before the reload that removes d.b
    m.setRules({ version: 'v2', domains: [{ name: 'd', statsKeys: ['d.a'] }] });
    expect(await values(m, 'ratelimit_hits_total')).toEqual({ 'd/d.a': 3 });
    m.observer.onDescriptor(report('d.a', 2));
    m.setRules({ version: 'v3', domains: [{ name: 'd', statsKeys: ['d.a', 'd.b'] }] });
    m.observer.onDescriptor(report('d.b', 1));
    expect(await values(m, 'ratelimit_hits_total')).toEqual({ 'd/d.a': 5, 'd/d.b': 1 });
  });

  it('fold request-derived keys past the cap into `other`, each report counted once, and admit more after the cap is raised', async () => {
    const m = createMetrics({ defaultMetrics: false, maxDetailedSeries: 2 });
    m.setRules({ version: 'v1', domains: [{ name: 'd', statsKeys: [] }] });
    for (const k of ['x1', 'x2', 'x3', 'x3', 'x4']) m.observer.onDescriptor(report(`d.${k}`, 1));
    expect(await values(m, 'ratelimit_hits_total')).toEqual({ 'd/d.x1': 1, 'd/d.x2': 1, 'd/other': 3 });
    expect(await values(m, 'ratelimit_detailed_series_folded_total')).toEqual({ d: 3 });
    m.setMaxDetailedSeries(3);
    m.observer.onDescriptor(report('d.x3', 1));
    expect(await values(m, 'ratelimit_hits_total')).toEqual({ 'd/d.x1': 1, 'd/d.x2': 1, 'd/d.x3': 1, 'd/other': 3 });
  });
});
