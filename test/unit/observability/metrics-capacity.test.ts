/**
 * The capacity service's per-resource counters (src/observability/metrics-capacity.ts): grants are added up outside
 * prom-client and handed over when the metrics are read, so every scrape is exact; resource ids come from
 * requests, so only the first 1,000 get a series of their own and the rest are counted under `other`.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.js';

async function samples(metrics: ReturnType<typeof createMetrics>, name: string): Promise<Map<string, number>> {
  const m = await metrics.registry.getSingleMetric(name)!.get();
  return new Map(m.values.map((v) => [String(v.labels['resource']), v.value]));
}

describe('capacity metrics', () => {
  it('counts every grant and expiry per resource, exact at each scrape, the 1,001st resource on as `other`', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const { observer } = metrics.capacityReport();
    for (let i = 0; i < 1000; i++) observer.onGrant(`r${i}`);
    for (let i = 0; i < 5; i++) observer.onGrant('r7');
    expect((await samples(metrics, 'ratelimit_capacity_refreshes_total')).get('r7')).toBe(6);
    observer.onGrant('r7');
    observer.onGrant('late-a');
    observer.onGrant('late-b');
    observer.onExpired('r3', 4);
    observer.onExpired('late-a', 2);
    const grants = await samples(metrics, 'ratelimit_capacity_refreshes_total');
    expect(grants.get('r7')).toBe(7);
    expect(grants.get('r999')).toBe(1);
    expect(grants.get('other')).toBe(2);
    expect(grants.has('late-a')).toBe(false);
    expect(grants.size).toBe(1001);
    const expiries = await samples(metrics, 'ratelimit_capacity_expired_leases_total');
    expect(Object.fromEntries(expiries)).toEqual({ r3: 4, other: 2 });
  });
});
