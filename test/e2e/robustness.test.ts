/**
 * No input crashes the service: random bytes as a ShouldRateLimit message, odd but well-formed requests
 * (huge, deep, non-UTF-8-looking values), and random bodies on POST /json. After all of it the service
 * still answers correctly.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RLS_PATH, RawRlsClient } from '../support/raw-rls.js';
import { prng } from '../support/prng.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

let t: TestService;
let client: RlsTestClient;
beforeAll(async () => {
  t = await startTestService({
    'x.yaml':
      'domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n  - key: w\n    value: "a*b*"\n    rate_limit: {unit: minute, requests_per_unit: 5}\n',
  });
  client = new RlsTestClient(t.grpcAddress);
});
afterAll(async () => {
  client.close();
  await t.close();
});

function rawCall(bytes: Uint8Array): Promise<grpc.status> {
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
        resolve(e ? e.code : grpc.status.OK);
      },
    );
  });
}

describe('robustness', () => {
  it('answers random bytes with a gRPC status, never a crash', async () => {
    const random = prng('robustness');
    const codes = new Set<grpc.status>();
    for (let i = 0; i < 300; i++) {
      const bytes = new Uint8Array(random.int(0, 200)).map(() => random.int(0, 255));
      codes.add(await rawCall(bytes));
    }
    // Undecodable messages are refused as invalid (never INTERNAL: that is a server fault); decodable ones
    // are answered or refused as invalid.
    for (const code of codes) expect([grpc.status.OK, grpc.status.INVALID_ARGUMENT]).toContain(code);
    expect(codes).toContain(grpc.status.INVALID_ARGUMENT);
    expect((await client.ask('x', [[['k', 'after-fuzz']]])).statuses[0]!.limit_remaining).toBe(4);
  });

  it('handles odd but valid requests (within the request limits)', async () => {
    const raw = new RawRlsClient(t.grpcAddress);
    const long = 'v'.repeat(4096); // MAX_VALUE_BYTES
    const odd = ['', '*', 'a*b*', '{x}', '\u0000', '\ud800', 'é✓😀', long];
    const r = await raw.call(
      'x',
      odd.map((v) => ({ entries: [['k', v]] as [string, string][] })),
    );
    expect(r.statuses).toHaveLength(odd.length);
    expect(r.statuses.map((s) => [s.code, s.limitRemaining])).toEqual(odd.map(() => [1, 4]));
    // MAX_REQUEST_DESCRIPTORS × MAX_DESCRIPTOR_ENTRIES
    const many = await raw.call(
      'x',
      Array.from({ length: 64 }, (_, i) => ({ entries: Array.from({ length: 16 }, (_, j) => [`k${j}`, `${i}`] as [string, string]) })),
    );
    expect(many.statuses).toHaveLength(64);
    expect((await raw.call('x', [{ entries: [['w', 'aXbY']] }])).statuses[0]!.currentLimit?.requestsPerUnit).toBe(5);
    raw.close();
  });

  it('answers random bodies on POST /json with 200, 429 or 400', async () => {
    const random = prng('json');
    const pieces = [
      '{',
      '}',
      '[',
      ']',
      '"domain"',
      '"x"',
      ':',
      ',',
      '"descriptors"',
      '"entries"',
      '"key"',
      '"k"',
      '"value"',
      '1',
      '-1',
      'null',
      'true',
      '"hitsAddend"',
      '"limit"',
      '"unit"',
      '"MINUTE"',
      '1e309',
    ];
    for (let i = 0; i < 200; i++) {
      const body = Array.from({ length: random.int(0, 30) }, () => pieces[random.int(0, pieces.length - 1)]).join('');
      const res = await fetch(`${t.httpBase}/json`, { method: 'POST', body });
      expect([200, 400, 429], body).toContain(res.status);
      await res.text();
    }
  });
});
