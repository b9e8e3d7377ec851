/**
 * Values a client can shape must be limited, never answered with an error: Envoy fails open by default
 * (failure_mode_deny: false), so an error answer means the request is not limited at all. The gRPC port, and POST /json.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MESSAGE_RULES } from '../support/on-limit-rules.js';
import { RawRlsClient } from '../support/raw-rls.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

const OK = 1;
const OVER_LIMIT = 2;

/** A lone continuation byte and a truncated 3-byte sequence: not UTF-8. */
const NOT_UTF8 = Uint8Array.from([0x61, 0x80, 0x20, 0xe2, 0x82, 0x2f]);

const BIG_RULES = `domain: big
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: cost
    rate_limit: {unit: minute, requests_per_unit: 1000}
`;

describe('hostile values over gRPC', () => {
  let t: TestService;
  let client: RawRlsClient;
  beforeAll(async () => {
    t = await startTestService({ 'msg.yaml': MESSAGE_RULES, 'big.yaml': BIG_RULES }, { jsonApi: 'on' });
    client = new RawRlsClient(t.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await t.close();
  });

  it('a redirect location holding bytes that are not UTF-8 is percent-encoded, and the request is limited', async () => {
    const first = await client.call('msg', [{ entries: [['redirect', NOT_UTF8]] }]);
    expect(first.overallCode).toBe(OK);
    const second = await client.call('msg', [{ entries: [['redirect', NOT_UTF8]] }]);
    expect(second.overallCode).toBe(OVER_LIMIT);
    const location = second.responseHeaders.find(([k]) => k === 'location')?.[1];
    expect(location).toBe('https://example.com/busy?who=redirect%3Da%80%20%E2%82%2F');
  });

  it('a value of 20 KB is limited, and the location it is inserted in stays short (cut at 1024 characters)', async () => {
    const value = 'é'.repeat(10_000);
    expect((await client.call('msg', [{ entries: [['redirect', value]] }])).overallCode).toBe(OK);
    const over = await client.call('msg', [{ entries: [['redirect', value]] }]);
    expect(over.overallCode).toBe(OVER_LIMIT);
    const location = over.responseHeaders.find(([k]) => k === 'location')?.[1] ?? '';
    expect(location).toBe(`https://example.com/busy?who=redirect%3D${'%C3%A9'.repeat(1014)}%E2%80%A6`);
  });

  it('a body and headers holding such bytes render (U+FFFD in the body, ? in a header)', async () => {
    await client.call('msg', [{ entries: [['json', NOT_UTF8]] }]);
    const over = await client.call('msg', [{ entries: [['json', NOT_UTF8]] }]);
    expect(over.overallCode).toBe(OVER_LIMIT);
    expect(JSON.parse(over.rawBody)).toMatchObject({ who: 'json=a\ufffd \ufffd\ufffd/' });
    await client.call('msg', [{ entries: [['text', NOT_UTF8]] }]);
    const text = await client.call('msg', [{ entries: [['text', NOT_UTF8]] }]);
    expect(text.overallCode).toBe(OVER_LIMIT);
    expect(text.responseHeaders).toContainEqual(['x-limit-reason', 'user text=a? ??/']);
  });

  it('values longer than MAX_VALUE_BYTES are limited, each under its own counter', async () => {
    const long = (last: string) => 'v'.repeat(5000) + last;
    const codes = async (value: string) => (await client.call('big', [{ entries: [['user', value]] }])).overallCode;
    const oversized = async () => (await scrapeMetrics(t.httpBase.slice('http://'.length))).get('ratelimit_oversized_input_total{field="value"}') ?? 0;
    const before = await oversized();
    expect([await codes(long('a')), await codes(long('a')), await codes(long('a'))]).toEqual([OK, OK, OVER_LIMIT]);
    expect([await codes(long('b')), await codes(long('b')), await codes(long('b'))]).toEqual([OK, OK, OVER_LIMIT]);
    expect((await oversized()) - before).toBe(6);
  });

  it('a hits_addend above 2^32 - 1 is over the limit, not an error', async () => {
    const over = await client.call('big', [{ entries: [['cost', 'c']], hitsAddend: 2 ** 40 }]);
    expect(over.overallCode).toBe(OVER_LIMIT);
    expect((await client.call('big', [{ entries: [['cost', 'c']], hitsAddend: 1000 }])).overallCode).toBe(OK);
    const metrics = await scrapeMetrics(t.httpBase.slice('http://'.length));
    expect(metrics.get('ratelimit_oversized_input_total{field="hits_addend"}')).toBe(1);
  });
});

describe('hostile values over POST /json', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ 'msg.yaml': MESSAGE_RULES, 'big.yaml': BIG_RULES }, { jsonApi: 'on' });
  });
  afterAll(async () => {
    await t.close();
  });
  const post = async (body: string) => {
    const res = await fetch(`${t.httpBase}/json`, { method: 'POST', body });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('a lone surrogate in a redirect location is limited (429 with the location), not a 500', async () => {
    const body = '{"domain":"msg","descriptors":[{"entries":[{"key":"redirect","value":"x\\ud800y\\udc80"}]}]}';
    expect((await post(body)).status).toBe(200);
    const over = await post(body);
    expect(over.status).toBe(429);
    expect(over.json.responseHeadersToAdd).toContainEqual({ key: 'location', value: 'https://example.com/busy?who=redirect%3Dx%EF%BF%BDy%80' });
  });

  it('a long value and a huge hitsAddend are limited', async () => {
    const body = (value: string, hits: number | string) =>
      JSON.stringify({ domain: 'big', descriptors: [{ entries: [{ key: 'cost', value }], hitsAddend: hits }] });
    expect((await post(body('x'.repeat(6000), 600))).status).toBe(200);
    expect((await post(body('x'.repeat(6000), 600))).status).toBe(429);
    expect((await post(body('y', '99999999999999999999'))).status).toBe(429);
  });
});
