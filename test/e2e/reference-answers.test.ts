/**
 * Answers compared with envoyproxy/ratelimit: each expectation here was measured on
 * the reference binary (shared/tools/envoy-ratelimit) with the same rules and requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient } from '../support/raw-rls.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `domain: q
descriptors:
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: w
    rate_limit: {unit: minute, requests_per_unit: 100}
`;

async function postJson(base: string, body: unknown): Promise<Record<string, unknown>> {
  return (await (await fetch(`${base}/json`, { method: 'POST', body: JSON.stringify(body) })).json()) as Record<string, unknown>;
}

describe('dynamic_metadata', () => {
  let plain: TestService;
  let withMetadata: TestService;
  beforeAll(async () => {
    plain = await startTestService({ 'q.yaml': RULES });
    withMetadata = await startTestService({ 'q.yaml': RULES }, { responseDynamicMetadata: true });
  });
  afterAll(async () => {
    await plain.close();
    await withMetadata.close();
  });

  it('is not sent by default, quota_mode rules included (the reference sends it only with RESPONSE_DYNAMIC_METADATA)', async () => {
    const raw = new RawRlsClient(plain.grpcAddress);
    try {
      const r = await raw.call('q', [{ entries: [['quota', 'a']] }, { entries: [['w', 'a']] }]);
      expect(r.overallCode).toBe(1);
      expect(r.dynamicMetadata.size).toBe(0);
    } finally {
      raw.close();
    }
  });

  it('with RESPONSE_DYNAMIC_METADATA=true is the request as the reference sends it (override as text, hits when present)', async () => {
    const answer = await postJson(withMetadata.httpBase, {
      domain: 'q',
      hitsAddend: 2,
      descriptors: [
        { entries: [{ key: 'w', value: '1' }], limit: { requestsPerUnit: 3, unit: 'HOUR' } },
        { entries: [{ key: 'w', value: '2' }], hitsAddend: '3' },
        {
          entries: [
            { key: 'w', value: '9' },
            { key: 'x', value: 'a=b' },
          ],
          hitsAddend: 0,
        },
      ],
    });
    // The reference's answer to the same request: {"descriptors":[{"entries":["w=1"],"limit":"requests_per_unit:3
    // unit:HOUR"},{"entries":["w=2"],"hitsAddend":3},{"entries":["w=9","x=a=b"],"hitsAddend":0}],"domain":"q","hitsAddend":2}
    expect(answer.dynamicMetadata).toEqual({
      domain: 'q',
      descriptors: [
        { entries: ['w=1'], limit: 'requests_per_unit:3 unit:HOUR' },
        { entries: ['w=2'], hitsAddend: 3 },
        { entries: ['w=9', 'x=a=b'], hitsAddend: 0 },
      ],
      hitsAddend: 2,
    });
  });
});

describe('quota_mode and overrides', () => {
  let t: TestService;
  let raw: RawRlsClient;
  beforeAll(async () => {
    t = await startTestService({ 'q.yaml': RULES });
    raw = new RawRlsClient(t.grpcAddress);
  });
  afterAll(async () => {
    raw.close();
    await t.close();
  });

  it('marks a quota descriptor over its limit OVER_LIMIT while the request is admitted (overall OK), as the reference', async () => {
    expect((await raw.call('q', [{ entries: [['quota', 'b1']] }])).overallCode).toBe(1);
    const r = await raw.call('q', [{ entries: [['quota', 'b1']] }, { entries: [['quota', 'b2']] }]);
    expect(r.overallCode).toBe(1); // OK: b2 still has quota
    expect(r.statuses.map((s) => s.code)).toEqual([2, 1]); // OVER_LIMIT, OK
    expect(r.responseHeaders.map(([k]) => k)).not.toContain('retry-after');
    // Every quota descriptor over: rejected.
    const all = await raw.call('q', [{ entries: [['quota', 'b1']] }, { entries: [['quota', 'b2']] }]);
    expect(all.overallCode).toBe(2);
  });

  it('applies an override with unit 7 as WEEK (the reference does; it was ignored here, the configured limit deciding)', async () => {
    const r = await raw.call('q', [{ entries: [['w', 'weekly']], limit: { requestsPerUnit: 3, unit: 7 } }]);
    expect(r.statuses[0]).toMatchObject({ code: 1, currentLimit: { requestsPerUnit: 3, unit: 7 }, limitRemaining: 2 });
    expect(r.statuses[0]!.resetSeconds).toBeGreaterThan(0);
    expect(r.statuses[0]!.resetSeconds).toBeLessThanOrEqual(604_800);
    // /json takes the enum's number as proto3 JSON allows, and its name.
    for (const unit of [7, 'WEEK']) {
      const answer = await postJson(t.httpBase, {
        domain: 'q',
        descriptors: [{ entries: [{ key: 'w', value: `weekly-${unit}` }], limit: { requestsPerUnit: 3, unit } }],
      });
      expect(answer.statuses).toMatchObject([{ code: 'OK', currentLimit: { requestsPerUnit: 3, unit: 'WEEK' }, limitRemaining: 2 }]);
    }
  });
});

describe('response headers', () => {
  it('RATELIMIT_HEADERS=none with RETRY_AFTER_HEADER=false adds no header at all, as the reference (retry-after could not be turned off)', async () => {
    const quiet = await startTestService({ 'q.yaml': RULES }, { rateLimitHeaders: 'none', retryAfterHeader: false });
    const loud = await startTestService({ 'q.yaml': RULES }, { rateLimitHeaders: 'none' });
    const rawQuiet = new RawRlsClient(quiet.grpcAddress);
    const rawLoud = new RawRlsClient(loud.grpcAddress);
    try {
      const over = [{ entries: [['w', 'h']] as [string, string][] }];
      expect((await rawQuiet.call('q', over, 100)).responseHeaders).toEqual([]);
      const rejected = await rawQuiet.call('q', over);
      expect(rejected.overallCode).toBe(2);
      expect(rejected.responseHeaders).toEqual([]);
      // The default keeps retry-after on rejections, and only there.
      expect((await rawLoud.call('q', over, 100)).responseHeaders).toEqual([]);
      expect((await rawLoud.call('q', over)).responseHeaders).toEqual([['retry-after', expect.stringMatching(/^\d+$/)]]);
    } finally {
      rawQuiet.close();
      rawLoud.close();
      await quiet.close();
      await loud.close();
    }
  });
});
