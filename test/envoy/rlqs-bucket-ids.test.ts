/**
 * Bucket ids Envoy builds from what clients send, through a real Envoy (1.40, --concurrency 1) running the
 * config published in docs/rlqs.md against the service with the rules published there (assignments living 6 s
 * here, so that an Envoy left unanswered falls back within the test):
 *
 * - an x-tenant value of 600 bytes (past the 512-byte id bound) does not cost the Envoy its other buckets:
 *   every later report is still answered, {name: all} stays at 20/s once its first assignment expired, and the
 *   long tenant is held to its 5/s (answered untracked);
 * - x-tenant values that are not printable ASCII (`ff fe`, `fe ff`: not UTF-8, which Envoy cannot be answered
 *   for) go to the config's shared {tenant: (unprintable)} bucket and are held to its 5/s, on one lasting stream.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { pacedTraffic, rlqsDocBlock, rlqsEnvoyConfig } from '../support/rlqs.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

interface Described {
  buckets: { bucket: Record<string, string>; holders: { share: number }[] }[];
}

describeEnvoy('RLQS: bucket ids as clients shape them, through Envoy', () => {
  let service: TestService;
  let upstream: Upstream;
  let envoy: EnvoyProcess | undefined;

  const describe = async (): Promise<Described> => (await (await fetch(`${service.httpBase}/rlqs`)).json()) as Described;
  const metric = async (name: string): Promise<number> => (await scrapeMetrics(service.httpBase.replace('http://', ''))).get(name) ?? 0;

  beforeAll(async () => {
    service = await startTestService({ 'edge.yaml': rlqsDocBlock('rlqs-rules') }, { rlqsAssignmentTtlS: 6 });
    upstream = await startUpstream();
  }, 60_000);
  afterEach(async () => {
    await envoy?.stop();
    envoy = undefined;
  });
  afterAll(async () => {
    await upstream?.close();
    await service?.close();
  });

  it('a 600-byte tenant leaves the other buckets decided: {name: all} held to 20/s past its first TTL, the tenant to 5/s', async () => {
    envoy = await startEnvoy(rlqsEnvoyConfig(service.grpcAddress, upstream.port));
    const url = await envoy.listenerUrl('ingress');
    await (await fetch(`${url}/warm-up`)).arrayBuffer();
    await eventually(async () => (await describe()).buckets.some((b) => b.bucket['name'] === 'all' && b.holders.some((h) => h.share > 0)), {
      timeoutMs: 10_000,
      what: '{name: all} assigned',
    });
    const long = { 'x-tenant': 'L'.repeat(600) };
    await (await fetch(`${url}/long`, { headers: long })).arrayBuffer();
    // 12 s: two reports at least, and the first assignment of {name: all} (6 s) long expired.
    const [all, tenant] = await Promise.all([pacedTraffic(`${url}/all`, 40, 12_000), pacedTraffic(`${url}/long`, 20, 12_000, long)]);
    const late = all.admittedPerSecond.slice(7, 12).reduce((a, b) => a + b, 0) / 5;
    const tenantAdmitted = tenant.byStatus.get(200) ?? 0;
    process.stderr.write(`rlqs long tenant: {name: all} ${JSON.stringify(all.admittedPerSecond)}/s, long tenant ${tenantAdmitted} of ${tenant.sent}\n`);
    expect(late).toBeLessThanOrEqual(1.15 * 20);
    expect(late).toBeGreaterThanOrEqual(0.8 * 20);
    expect(tenantAdmitted).toBeLessThanOrEqual(1.2 * 5 * 12 + 5); // its first, full bucket of 5 besides
    expect(tenantAdmitted).toBeGreaterThanOrEqual(0.8 * 5 * 12);
    expect(await metric('ratelimit_rlqs_refused_total{reason="malformed"}')).toBe(0);
    expect(await metric('ratelimit_rlqs_refused_total{reason="bucket_id_size"}')).toBeGreaterThan(0);
  }, 60_000);

  it('tenants ff fe and fe ff (not UTF-8) share the {tenant: (unprintable)} bucket, held to 5/s, on a stream that lasts', async () => {
    envoy = await startEnvoy(rlqsEnvoyConfig(service.grpcAddress, upstream.port));
    const url = await envoy.listenerUrl('ingress');
    const runs = await Promise.all(['\xff\xfe', '\xfe\xff'].map((t) => pacedTraffic(`${url}/bytes`, 10, 6000, { 'x-tenant': t })));
    const admitted = runs.reduce((n, r) => n + (r.byStatus.get(200) ?? 0), 0);
    process.stderr.write(`rlqs tenants ff fe + fe ff: ${admitted} of ${runs.reduce((n, r) => n + r.sent, 0)}\n`);
    expect(admitted).toBeLessThanOrEqual(1.2 * 5 * 6 + 5);
    expect(admitted).toBeGreaterThanOrEqual(0.8 * 5 * 6);
    expect((await describe()).buckets.some((b) => b.bucket['tenant'] === '(unprintable)')).toBe(true);
    // One stream all along (an answer Envoy could not read would have ended it), every bucket found.
    expect((await envoy.stats('^cluster\\.ratelimit\\.upstream_rq_total$')).get('cluster.ratelimit.upstream_rq_total')).toBe(1);
    expect(envoy.logs()).not.toContain("isn't present in the bucket cache");
  }, 60_000);
});
