/**
 * StreamRateLimitQuotas over real sockets, messages built and read with Envoy's own rlqs.proto (from
 * @grpc/grpc-js-xds):
 * what each kind of bucket is assigned, a report answered at once, a second Envoy shrinking the first's share
 * in the same moment, a malformed report dropped without ending the stream, the per-connection stream bound,
 * a report of 5,000 buckets answered and one over 4 MiB refused, answers over 1 MiB back to back, at most 10,000
 * buckets of a message decided, a bucket id that is not UTF-8 left
 * unanswered, a half-close ended with OK, a stream kept past the gRPC port's message timeout (its request never ends), and a
 * client that does not read its answers cut off.
 */
import * as http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcFrame } from '../support/raw-h2.js';
import { encodeReports, QuotaStream } from '../support/rlqs.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: quota
descriptors:
  - key: name
    value: all
    rate_limit: {unit: second, requests_per_unit: 20}
  - key: name
    value: closed
    rate_limit: {unit: second, requests_per_unit: 0}
  - key: name
    value: watched
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 60}
  - key: name
    value: shared
    descriptors:
      - key: region
        value: eu
        rate_limit: {unit: second, requests_per_unit: 20}
`;

describe('RLQS stream', () => {
  let service: TestService;
  const streams: QuotaStream[] = [];
  const open = (address: ConstructorParameters<typeof QuotaStream>[0] = service.grpcAddress) => {
    const s = new QuotaStream(address);
    streams.push(s);
    return s;
  };

  beforeAll(async () => {
    // A short message timeout: a quota stream must outlive it.
    service = await startTestService({ 'quota.yaml': RULES }, { grpcMessageTimeoutMs: 300 });
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await service?.close();
  });

  it('answers the first report at once: a token bucket of the limit, DENY_ALL at 0, ALLOW_ALL without a rule or in shadow mode', async () => {
    const s = open();
    s.send('quota', [
      { bucket: { name: 'all' }, allowed: 1 },
      { bucket: { name: 'closed' } },
      { bucket: { name: 'nothing' } },
      { bucket: { name: 'watched' } },
      { bucket: { tenant: 'acme' } },
    ]);
    const actions = await s.response(1);
    expect(actions.map((a) => a.bucket_id.bucket)).toEqual([{ name: 'all' }, { name: 'closed' }, { name: 'nothing' }, { name: 'watched' }, { tenant: 'acme' }]);
    const q = actions.map((a) => a.quota_assignment_action!);
    expect(q[0]).toEqual({
      assignment_time_to_live: { seconds: 30 },
      rate_limit_strategy: { token_bucket: { max_tokens: 20, tokens_per_fill: { value: 20 }, fill_interval: { seconds: 1 } } },
    });
    expect(q[1]!.rate_limit_strategy).toEqual({ blanket_rule: 'DENY_ALL' });
    expect(q[2]!.rate_limit_strategy).toEqual({ blanket_rule: 'ALLOW_ALL' });
    expect(q[3]!.rate_limit_strategy).toEqual({ blanket_rule: 'ALLOW_ALL' });
    // A per-minute rule: fill every 60 s.
    expect(q[4]!.rate_limit_strategy).toEqual({ token_bucket: { max_tokens: 60, tokens_per_fill: { value: 60 }, fill_interval: { seconds: 60 } } });
    for (const a of q) expect(a.assignment_time_to_live).toEqual({ seconds: 30 });
    // The shadow-mode bucket counts what its limit (10 a minute) would have refused of what was admitted.
    s.send('quota', [{ bucket: { name: 'watched' }, allowed: 25 }]);
    await s.response(2);
    const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
    expect(metrics.get('ratelimit_rlqs_shadow_would_deny_total{domain="quota"}')).toBe(15);
    expect(metrics.get('ratelimit_rlqs_reported_requests_total{domain="quota",result="allowed"}')).toBe(26);
    s.close();
  });

  it("shrinks the first Envoy's share in the moment a second one joins, and hands out no more than the limit", async () => {
    const a = open();
    // {name: shared, region: eu} is the descriptor (name=shared, region=eu): keys in sorted order.
    a.send('quota', [{ bucket: { region: 'eu', name: 'shared' } }]);
    expect((await a.response(1))[0]!.quota_assignment_action!.rate_limit_strategy!.token_bucket!.max_tokens).toBe(20);
    const b = open();
    b.send('quota', [{ bucket: { name: 'shared', region: 'eu' } }]); // the same bucket, keys sent in the other order
    const bShare = (await b.response(1))[0]!.quota_assignment_action!.rate_limit_strategy!.token_bucket!.max_tokens;
    const pushed = await a.response(2);
    const aShare = pushed[0]!.quota_assignment_action!.rate_limit_strategy!.token_bucket!.max_tokens;
    expect(pushed[0]!.bucket_id.bucket).toEqual({ name: 'shared', region: 'eu' });
    expect([aShare, bShare]).toEqual([10, 10]);
    const view = (await (await fetch(`${service.httpBase}/rlqs`)).json()) as { buckets: { bucket: Record<string, string>; holders: { share: number }[] }[] };
    const bucket = view.buckets.find((x) => x.bucket['region'] === 'eu')!;
    expect(bucket.holders.map((h) => h.share)).toEqual([10, 10]);
    // The first Envoy leaves: the second grows at its next report.
    a.close();
    await new Promise((r) => setTimeout(r, 100));
    b.send('quota', [{ bucket: { name: 'shared', region: 'eu' }, allowed: 3 }]);
    expect((await b.response(2))[0]!.quota_assignment_action!.rate_limit_strategy!.token_bucket!.max_tokens).toBe(20);
  });

  it('drops a malformed report without ending the stream, and counts it', async () => {
    const s = open();
    s.sendRaw(Buffer.from([0, 0, 0, 0, 3, 0x12, 0x05, 0x0a])); // field 2 claims 5 bytes, has 1
    s.send('quota', [{ bucket: { name: 'nothing' } }]);
    expect((await s.response(1))[0]!.bucket_id.bucket).toEqual({ name: 'nothing' });
    expect(s.status).toBeUndefined();
    const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
    expect(metrics.get('ratelimit_rlqs_refused_total{reason="malformed"}')).toBe(1);
  });

  it('answers a report of 5,000 buckets (about 150 KB) at once; ends a stream whose report is over 4 MiB RESOURCE_EXHAUSTED', async () => {
    const s = open();
    const usages = Array.from({ length: 5000 }, (_, i) => ({ bucket: { tenant: `tenant-${String(i).padStart(5, '0')}` }, allowed: 1 }));
    const report = encodeReports('quota', usages);
    expect(report.length).toBeGreaterThan(128 * 1024);
    s.sendRaw(grpcFrame(report));
    const actions = await s.response(1);
    expect(actions).toHaveLength(5000);
    expect(actions[4999]!.bucket_id.bucket).toEqual({ tenant: 'tenant-04999' });
    expect(s.status).toBeUndefined();
    const big = open();
    big.sendRaw(grpcFrame(encodeReports('quota', [{ bucket: { id: 'x'.repeat(4 * 1024 * 1024) } }])));
    expect((await big.ended()).code).toBe(8);
    s.close();
  });

  it('answers two reports of 3 MB sent back to back (each answer larger than 1 MiB), and decides at most 10,000 buckets of a message', async () => {
    const s = open();
    const report = grpcFrame(
      encodeReports(
        'quota',
        Array.from({ length: 5000 }, (_, i) => ({ bucket: { tenant: `${String(i).padStart(5, '0')}${'t'.repeat(600)}` } })),
      ),
    );
    expect(report.length).toBeGreaterThan(3_000_000);
    s.sendRaw(report);
    s.sendRaw(report);
    expect(await s.response(1)).toHaveLength(5000);
    expect(await s.response(2)).toHaveLength(5000);
    expect(s.status).toBeUndefined();
    const many = open();
    many.send(
      'quota',
      Array.from({ length: 12_000 }, (_, i) => ({ bucket: { name: `n${i}` } })),
    );
    expect(await many.response(1)).toHaveLength(10_000);
    s.close();
    many.close();
  });

  it('leaves a bucket id that is not UTF-8 unanswered (Envoy would refuse the whole answer) and decides the others', async () => {
    const s = open();
    // {tenant: ff fe} hand-encoded (a proto3 string cannot hold it), then {name: all}.
    const entry = Buffer.from([0x0a, 0x06, ...Buffer.from('tenant'), 0x12, 0x02, 0xff, 0xfe]);
    const id = Buffer.from([0x0a, entry.length, ...entry]);
    const usage = Buffer.from([0x0a, id.length, ...id]);
    s.sendRaw(
      grpcFrame(
        Buffer.concat([Buffer.from([0x0a, 0x05, ...Buffer.from('quota'), 0x12, usage.length]), usage, encodeReports('', [{ bucket: { name: 'all' } }])]),
      ),
    );
    const actions = await s.response(1);
    expect(actions.map((a) => a.bucket_id.bucket)).toEqual([{ name: 'all' }]);
    expect(s.status).toBeUndefined();
    const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
    expect(metrics.get('ratelimit_rlqs_refused_total{reason="bucket_id_encoding"}')).toBe(1);
    s.close();
  });

  it('ends the ninth stream on one connection RESOURCE_EXHAUSTED; a half-close ends a stream OK', async () => {
    const first = open();
    first.send('quota', [{ bucket: { name: 'nothing' } }]);
    await first.response(1);
    const shared = Array.from({ length: 8 }, () => open(first.session));
    const statuses = await Promise.all(
      shared.map(async (s) => {
        s.send('quota', [{ bucket: { name: 'nothing' } }]);
        await s.response(1).catch(() => undefined);
        return s.status?.code;
      }),
    );
    expect(statuses.filter((c) => c === 8)).toHaveLength(1); // RESOURCE_EXHAUSTED
    first.halfClose();
    expect((await first.ended()).code).toBe(0);
  });

  it('keeps a stream open past the message timeout of unary calls (GRPC_MESSAGE_TIMEOUT_MS, 300 ms here)', async () => {
    const s = open();
    s.send('quota', [{ bucket: { name: 'nothing' } }]);
    await s.response(1);
    await new Promise((r) => setTimeout(r, 700));
    s.send('quota', [{ bucket: { name: 'nothing' } }]);
    await s.response(2);
    expect(s.status).toBeUndefined();
  });

  it('ends RESOURCE_EXHAUSTED the stream of a client that does not read its answers', async () => {
    // A client session that may hold what it sends (node:http2 keeps 10 MiB by default).
    const s = open(http2.connect(`http://${service.grpcAddress}`, { maxSessionMemory: 100 }));
    s.pause();
    // 10 reports of 1,000 buckets (the stream's whole budget of 10,000), answers of about 2 MB each: past what
    // the quota method lets a client leave unread (1 MiB beyond its largest answer).
    const big = grpcFrame(
      encodeReports(
        'quota',
        Array.from({ length: 1000 }, (_, i) => ({ bucket: { id: `${String(i).padStart(4, '0')}${'x'.repeat(2000)}` } })),
      ),
    );
    for (let i = 0; i < 10; i++) s.sendRaw(big);
    await new Promise((r) => setTimeout(r, 500));
    s.resume();
    const status = await s.ended();
    expect(status).toEqual({ code: 8, message: 'the client is not reading its answers' });
  });
});

describe('RLQS stream at shutdown', () => {
  it('ends open quota streams with OK when the service stops, instead of holding the shutdown for its grace period (TTL from RLQS_ASSIGNMENT_TTL_S)', async () => {
    const service = await startTestService({ 'quota.yaml': RULES }, { shutdownGraceMs: 10_000, rlqsAssignmentTtlS: 7 });
    const s = new QuotaStream(service.grpcAddress);
    try {
      s.send('quota', [{ bucket: { name: 'all' } }]);
      // RLQS_ASSIGNMENT_TTL_S sets every assignment's TTL.
      expect((await s.response(1))[0]!.quota_assignment_action!.assignment_time_to_live).toEqual({ seconds: 7 });
      const started = performance.now();
      await service.close();
      expect(performance.now() - started).toBeLessThan(5000);
      expect((await s.ended()).code).toBe(0);
    } finally {
      s.close();
    }
  });
});
