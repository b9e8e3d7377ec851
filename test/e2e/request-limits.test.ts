/**
 * Request limits, malformed messages and non-UTF-8 values through the real service:
 * every limit answered with its status and a message naming the setting, over gRPC and POST /json;
 * malformed protobuf → INVALID_ARGUMENT; an oversized /json body → 413, not a reset; values that differ
 * only in bytes that are not UTF-8 keep separate counters.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RLS_PATH, RawRlsClient, encodeRequest, type RawDescriptor } from '../support/raw-rls.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = { 'x.yaml': 'domain: x\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n' };

let t: TestService;
let raw: RawRlsClient;
beforeAll(async () => {
  t = await startTestService(RULES, { jsonApi: 'on' });
  raw = new RawRlsClient(t.grpcAddress);
});
afterAll(async () => {
  raw.close();
  await t.close();
});

/** The gRPC status and details of a call that must fail. */
async function refusal(descriptors: RawDescriptor[], hitsAddend = 0, client = raw): Promise<{ code: string; details: string }> {
  try {
    await client.call('x', descriptors, hitsAddend);
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: grpc.status[e.code], details: e.details };
  }
  throw new Error('the call succeeded');
}

function rawBytes(bytes: Uint8Array): Promise<{ code: string; details: string }> {
  const c = new grpc.Client(t.grpcAddress, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    c.makeUnaryRequest(
      RLS_PATH,
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => b,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + 5000 },
      (e) => {
        c.close();
        resolve({ code: grpc.status[e?.code ?? grpc.status.OK], details: e?.details ?? '' });
      },
    );
  });
}

const user = (v: string | Uint8Array): RawDescriptor => ({ entries: [['user', v]] });
const postJson = (body: string) => fetch(`${t.httpBase}/json`, { method: 'POST', body });

describe('request limits over gRPC', () => {
  it("answers requests past each limit that Envoy's configuration fixes with RESOURCE_EXHAUSTED and names the setting", async () => {
    expect(await refusal(Array.from({ length: 65 }, () => user('a')))).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      details: 'request has more than 64 descriptors (MAX_REQUEST_DESCRIPTORS)',
    });
    expect(await refusal([{ entries: Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'] as [string, string]) }])).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      details: 'descriptors[0] has more than 16 entries (MAX_DESCRIPTOR_ENTRIES)',
    });
    expect(await refusal([{ entries: [['u'.repeat(300), 'v']] }])).toEqual({
      code: 'RESOURCE_EXHAUSTED',
      details: 'descriptors[0].entries[0].key is 300 bytes; at most 256 are allowed (MAX_KEY_BYTES)',
    });
    const big = await refusal(Array.from({ length: 20 }, () => user('v'.repeat(4000))));
    expect(big.code).toBe('RESOURCE_EXHAUSTED');
    expect(big.details).toMatch(/larger than max .* 65536/);
  });

  it('refuses a 4 MiB request of ~320k descriptors and keeps answering', async () => {
    const huge = encodeRequest(
      'x',
      Array.from({ length: 320_000 }, () => ({ entries: [['user', 'a']] })),
    );
    expect(huge.length).toBeGreaterThan(4_000_000);
    expect((await rawBytes(huge)).code).toBe('RESOURCE_EXHAUSTED');
    expect((await raw.call('x', [user('after-huge')])).statuses[0]!.limitRemaining).toBe(4);
  });

  it('takes its limits from the settings', async () => {
    const small = await startTestService(RULES, { maxRequestDescriptors: 2, maxValueBytes: 3 });
    const client = new RawRlsClient(small.grpcAddress);
    try {
      expect((await client.call('x', [user('a'), user('b')])).statuses).toHaveLength(2);
      expect((await refusal([user('a'), user('b'), user('c')], 0, client)).details).toBe('request has more than 2 descriptors (MAX_REQUEST_DESCRIPTORS)');
      // A longer value is decided all the same (test/e2e/hostile-values.test.ts).
      expect((await client.call('x', [user('abcd')])).statuses[0]!.limitRemaining).toBe(4);
    } finally {
      client.close();
      await small.close();
    }
  });

  it('answers malformed messages with INVALID_ARGUMENT and says what is wrong', async () => {
    expect(await rawBytes(Uint8Array.of(0x0a, 0x05, 0x61))).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'malformed RateLimitRequest: length past the end of the message at top level (byte 2)',
    });
    const wrongType = await rawBytes(Uint8Array.of(0x12, 0x02, 0x08, 0x01)); // descriptors[0].entries as a varint
    expect(wrongType).toEqual({
      code: 'INVALID_ARGUMENT',
      details: 'malformed RateLimitRequest: field entries has wire type 0, expected 2 at descriptors[0] (byte 2)',
    });
  });
});

describe('non-UTF-8 values', () => {
  it('keys counters by the bytes: values differing only in invalid bytes do not share a counter', async () => {
    const latin1 = (s: string) => Buffer.from(s, 'latin1'); // how a Latin-1 header value reaches us
    const remaining = async (v: Uint8Array) => (await raw.call('x', [user(v)])).statuses[0]!.limitRemaining;
    expect([await remaining(latin1('jé')), await remaining(latin1('jé')), await remaining(latin1('jé'))]).toEqual([4, 3, 2]);
    expect(await remaining(latin1('jè'))).toBe(4);
    expect(await remaining(latin1('jà'))).toBe(4);
    expect(await remaining(Buffer.from('j\ufffd', 'utf8'))).toBe(4); // a real U+FFFD is a value of its own
    expect(await remaining(Buffer.from('jé', 'utf8'))).toBe(4); // and so is the UTF-8 spelling
  });

  it('lets /json name raw bytes as \\udc80-\\udcff escapes, the same counter as over gRPC', async () => {
    const body = JSON.stringify({ domain: 'x', descriptors: [{ entries: [{ key: 'user', value: 'k\udcf6' }] }] });
    const res = await postJson(body);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { statuses: { limitRemaining: number }[] }).statuses[0]!.limitRemaining).toBe(4);
    expect((await raw.call('x', [user(Buffer.from('k\xf6', 'latin1'))])).statuses[0]!.limitRemaining).toBe(3);
  });
});

describe('request limits over POST /json', () => {
  const body = (descriptors: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ domain: 'x', descriptors, ...extra });
  const d = (value: string) => ({ entries: [{ key: 'user', value }] });

  it('applies the same limits: 413 too big, 400 invalid, with the same messages; a long value or a huge hits_addend is limited', async () => {
    const many = await postJson(body(Array.from({ length: 65 }, () => d('a'))));
    expect(many.status).toBe(413);
    expect(await many.json()).toEqual({ error: 'request has more than 64 descriptors (MAX_REQUEST_DESCRIPTORS)' });
    const long = await postJson(body([d('v'.repeat(5000))]));
    expect(long.status).toBe(200);
    await long.text();
    const hits = await postJson(body([d('a')], { hitsAddend: 2 ** 40 }));
    expect(hits.status).toBe(429);
    await hits.text();
    const notUtf8 = await fetch(`${t.httpBase}/json`, { method: 'POST', body: Buffer.from('{"domain":"x\xff"}', 'latin1') });
    expect(notUtf8.status).toBe(400);
    await notUtf8.text();
  });

  it('answers an oversized body with 413 (not a connection reset), then serves the next request', async () => {
    for (const size of [100_000, 2 * 1024 * 1024]) {
      const res = await postJson(body([d('x'.repeat(size))]));
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: 'body larger than 65536 bytes (MAX_REQUEST_BYTES)' });
    }
    expect((await postJson(body([d('after-big')]))).status).toBe(200);
  });
});
