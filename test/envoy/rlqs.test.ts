/**
 * The Rate Limit Quota Service with real Envoys (1.40, --concurrency 1) running the config published in
 * docs/rlqs.md (only addresses substituted) against the service with the rules published there:
 *
 * - two Envoys share the global limit of 20/s on bucket {name: all} under 40/s of traffic: together they admit
 *   0.8–1.15× of the limit once both hold an assignment, and the rest is answered 429;
 * - per-tenant buckets from the x-tenant header, at the same time: each tenant is held to its own 5/s across
 *   both Envoys;
 * - no per-request call: each Envoy makes one gRPC call (the stream), whose reports are far fewer than requests;
 * - skewed load (30/s and 4/s): the split follows demand to 15/5;
 * - the service stopped and restarted on the same port: the last shares hold meanwhile, and the Envoys are
 *   assigned again within 10 s of its return.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { pacedTraffic, rlqsDocBlock, rlqsEnvoyConfig } from '../support/rlqs.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

const RUN_MS = 8000;

interface Holder {
  stream: string;
  share: number;
}
interface Described {
  buckets: { bucket: Record<string, string>; holders: Holder[] }[];
}

describeEnvoy('RLQS: two Envoys share a global limit', () => {
  let service: TestService;
  let upstream: Upstream;
  const envoys: EnvoyProcess[] = [];
  const urls: string[] = [];

  const describe = async (): Promise<Described> => (await (await fetch(`${service.httpBase}/rlqs`)).json()) as Described;
  const holdersOf = async (key: string, value: string): Promise<Holder[]> => (await describe()).buckets.find((b) => b.bucket[key] === value)?.holders ?? [];

  beforeAll(async () => {
    service = await startTestService({ 'edge.yaml': rlqsDocBlock('rlqs-rules') });
    upstream = await startUpstream();
    for (let i = 0; i < 2; i++) {
      const envoy = await startEnvoy(rlqsEnvoyConfig(service.grpcAddress, upstream.port));
      envoys.push(envoy);
      urls.push(await envoy.listenerUrl('ingress'));
    }
  }, 60_000);
  afterAll(async () => {
    for (const e of envoys) await e.stop();
    await upstream?.close();
    await service?.close();
  });

  it('keeps 20/s across both Envoys under 40/s, tenants to 5/s each, with messages ≪ requests', async () => {
    // One request through each Envoy opens its stream and its {name: all} bucket (and one per tenant).
    for (const url of urls) {
      await (await fetch(`${url}/warm-up`)).arrayBuffer();
      await (await fetch(`${url}/warm-up`, { headers: { 'x-tenant': 'acme' } })).arrayBuffer();
    }
    await eventually(async () => (await holdersOf('name', 'all')).filter((h) => h.share > 0).length === 2 && (await holdersOf('tenant', 'acme')).length === 2, {
      timeoutMs: 10_000,
      what: 'both Envoys assigned',
    }).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n/rlqs: ${JSON.stringify(await describe())}\n${envoys.map((e) => e.logs()).join('\n---\n')}`);
    });
    expect((await holdersOf('name', 'all')).reduce((n, h) => n + h.share, 0)).toBeLessThanOrEqual(20);

    const [all0, all1, acme0, acme1, globex] = await Promise.all([
      pacedTraffic(`${urls[0]}/all`, 20, RUN_MS),
      pacedTraffic(`${urls[1]}/all`, 20, RUN_MS),
      pacedTraffic(`${urls[0]}/t`, 10, RUN_MS, { 'x-tenant': 'acme' }),
      pacedTraffic(`${urls[1]}/t`, 10, RUN_MS, { 'x-tenant': 'acme' }),
      pacedTraffic(`${urls[1]}/t`, 10, RUN_MS, { 'x-tenant': 'globex' }),
    ]);
    const seconds = RUN_MS / 1000;
    const admitted = (all0.byStatus.get(200) ?? 0) + (all1.byStatus.get(200) ?? 0);
    const denied = (all0.byStatus.get(429) ?? 0) + (all1.byStatus.get(429) ?? 0);
    const acme = (acme0.byStatus.get(200) ?? 0) + (acme1.byStatus.get(200) ?? 0);
    const globexAdmitted = globex.byStatus.get(200) ?? 0;
    const report = {
      admitted,
      denied,
      ratio: admitted / (20 * seconds),
      acme,
      globex: globexAdmitted,
      all0: [...all0.byStatus],
      all1: [...all1.byStatus],
      perSecond: [all0.admittedPerSecond, all1.admittedPerSecond],
    };
    process.stderr.write(`rlqs two Envoys: ${JSON.stringify(report)}\n`);
    // Every answer was a 200 or Envoy's 429: nothing failed or was skipped.
    expect(admitted + denied).toBe(all0.sent + all1.sent);
    expect(admitted / (20 * seconds)).toBeGreaterThanOrEqual(0.8);
    expect(admitted / (20 * seconds)).toBeLessThanOrEqual(1.15);
    // Each tenant is held to its own 5/s (one full bucket per Envoy at the start is the allowance).
    expect(acme / (5 * seconds)).toBeGreaterThanOrEqual(0.8);
    expect(acme / (5 * seconds)).toBeLessThanOrEqual(1.3);
    expect(globexAdmitted / (5 * seconds)).toBeGreaterThanOrEqual(0.8);
    expect(globexAdmitted / (5 * seconds)).toBeLessThanOrEqual(1.3);

    // No per-request call: each Envoy made one gRPC call (the stream) for all its requests, and the reports
    // on it are a small fraction of the requests.
    const requests = all0.sent + all1.sent + acme0.sent + acme1.sent + globex.sent;
    for (const e of envoys) {
      const s = await e.stats('^cluster\\.ratelimit\\.upstream_(rq_total|cx_tx_bytes_total)$');
      expect(s.get('cluster.ratelimit.upstream_rq_total')).toBe(1);
      process.stderr.write(`envoy → service: ${s.get('cluster.ratelimit.upstream_cx_tx_bytes_total')} bytes\n`);
    }
    const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
    const messages = metrics.get('ratelimit_rlqs_reports_total{domain="edge"}') ?? 0;
    const answers = [...metrics].filter(([k]) => k.startsWith('ratelimit_rlqs_assignments_total{domain="edge"')).reduce((n, [, v]) => n + v, 0);
    process.stderr.write(`rlqs: ${messages} reports and ${answers} bucket assignments for ${requests} requests\n`);
    expect(messages).toBeGreaterThan(0);
    expect(messages + answers).toBeLessThan(requests / 20);

    expect(metrics.get('ratelimit_rlqs_streams{domain="edge"}')).toBe(2);
    expect(metrics.get('ratelimit_rlqs_reported_requests_total{domain="edge",result="denied"}') ?? 0).toBeGreaterThan(0);
  }, 60_000);

  it('follows demand: with 30/s and 4/s on the two Envoys the split moves to about 15 and 5, admitting about 19/s', async () => {
    const stop = new AbortController();
    const traffic = Promise.all([pacedTraffic(`${urls[0]}/skew0`, 30, 25_000, {}, stop.signal), pacedTraffic(`${urls[1]}/skew1`, 4, 25_000, {}, stop.signal)]);
    const admitted = () => [0, 1].map((i) => upstream.requests.filter((r) => r.url === `/skew${i}`).length);
    try {
      // Each Envoy reports every 5 s; once both have reported a whole interval of the new load, the split follows.
      await eventually(
        async () => {
          const shares = (await holdersOf('name', 'all')).map((h) => h.share).sort((a, b) => a - b);
          return shares.length === 2 && shares[0]! <= 7 && shares[1]! >= 13;
        },
        { timeoutMs: 15_000, intervalMs: 200, what: 'the split to follow demand' },
      );
      const before = admitted();
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 4000));
      const after = admitted();
      const seconds = (performance.now() - t0) / 1000;
      const [busy, light] = [(after[0]! - before[0]!) / seconds, (after[1]! - before[1]!) / seconds];
      process.stderr.write(`rlqs skewed: busy ${busy.toFixed(1)}/s, light ${light.toFixed(1)}/s, shares ${JSON.stringify(await holdersOf('name', 'all'))}\n`);
      expect(busy + light).toBeGreaterThanOrEqual(0.8 * 20);
      expect(busy + light).toBeLessThanOrEqual(1.15 * 20);
      expect(busy).toBeGreaterThan(12); // an even split would hold it to 10
      expect(light).toBeGreaterThanOrEqual(3);
    } finally {
      stop.abort();
    }
    for (const r of await traffic) expect((r.byStatus.get(200) ?? 0) + (r.byStatus.get(429) ?? 0)).toBe(r.sent);
  }, 60_000);

  it('keeps enforcing the last shares while the service is gone, and is assigned again within 10 s of its return', async () => {
    const port = Number(service.grpcAddress.split(':')[1]);
    await service.close();
    const admittedSince = (since: number) => upstream.requests.slice(since).filter((r) => r.url === '/outage').length;
    // 40/s for 2 s with the service gone: the assignments (TTL 30 s) still hold Envoy to its shares.
    let mark = upstream.requests.length;
    const outage = await Promise.all(urls.map((u) => pacedTraffic(`${u}/outage`, 20, 2000)));
    const outageRate = admittedSince(mark) / 2;
    for (const r of outage) expect((r.byStatus.get(200) ?? 0) + (r.byStatus.get(429) ?? 0)).toBe(r.sent);
    service = await startTestService({ 'edge.yaml': rlqsDocBlock('rlqs-rules') }, { grpcPort: port });
    const back = performance.now();
    // Envoy retries the stream on its 5 s tick and reports every bucket again: once it is answered, enforcing.
    const stop = new AbortController();
    const traffic = Promise.all(urls.map((u) => pacedTraffic(`${u}/outage`, 20, 20_000, {}, stop.signal)));
    try {
      await eventually(async () => (await holdersOf('name', 'all')).filter((h) => h.share > 0).length === 2, {
        timeoutMs: 10_000,
        intervalMs: 100,
        what: 'both Envoys assigned again',
      });
      const reassignedS = (performance.now() - back) / 1000;
      mark = upstream.requests.length;
      await new Promise((r) => setTimeout(r, 2000));
      const afterRate = admittedSince(mark) / 2;
      process.stderr.write(`rlqs restart: ${outageRate}/s admitted while gone, assigned again after ${reassignedS.toFixed(1)} s, then ${afterRate}/s\n`);
      expect(outageRate).toBeLessThanOrEqual(1.15 * 20 + 10); // held by the last shares (plus a fresh bucket's fill)
      expect(afterRate).toBeGreaterThanOrEqual(0.8 * 20);
      expect(afterRate).toBeLessThanOrEqual(1.15 * 20 + 10);
    } finally {
      stop.abort();
    }
    await traffic;
  }, 60_000);
});
