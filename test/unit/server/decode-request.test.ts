/**
 * Our RateLimitRequest decoder (server/rls/decode-request.ts): the same result as the .proto-based decoder on
 * valid input, a coded error (never a crash, never another error type) on malformed input, and the
 * request limits enforced while reading.
 */
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { InvalidRequestError, RateLimitError, RequestTooLargeError } from '../../../src/vocab/errors.js';
import { checkRequest, DEFAULT_REQUEST_LIMITS } from '../../../src/vocab/request-limits.js';
import { decodeRateLimitRequest } from '../../../src/server/rls/decode-request.js';
import { requestFromJson } from '../../../src/server/http/json-api.js';
import { loadProtos } from '../../../src/server/grpc/protos.js';
import { requestFromWire, type WireRequest } from '../../../src/server/rls/proto-objects.js';
import { prng } from '../../support/prng.js';
import { encodeRequest, type RawDescriptor } from '../../support/raw-rls.js';

const limits = DEFAULT_REQUEST_LIMITS;
const protoDecode = (b: Uint8Array) => requestFromWire(loadProtos().rls.ShouldRateLimit!.requestDeserialize(Buffer.from(b)) as WireRequest);

function randomRequest(seed: string): Uint8Array {
  const random = prng(seed);
  const word = () => random.pick(['', 'a', 'user', 'é✓', '😀x', 'k'.repeat(random.int(0, 40))]);
  const descriptors: RawDescriptor[] = Array.from({ length: random.int(1, 5) }, () => ({
    entries: Array.from({ length: random.int(0, 4) }, () => [word(), word()] as [string, string]),
    ...(random.chance(0.3) ? { limit: { requestsPerUnit: random.int(0, 1000), unit: random.int(0, 8) } } : {}),
    ...(random.chance(0.3) ? { hitsAddend: random.int(0, 5) } : {}),
  }));
  return encodeRequest(word() || 'd', descriptors, random.int(0, 3));
}

describe('decodeRateLimitRequest', () => {
  it('decodes valid requests exactly as the .proto-based decoder does', () => {
    for (let i = 0; i < 300; i++) {
      const b = randomRequest(`valid-${i}`);
      expect(decodeRateLimitRequest(b, limits)).toEqual(protoDecode(b));
    }
  });

  it('skips unknown fields of every wire type', () => {
    const w = protobuf.Writer.create();
    w.uint32((9 << 3) | 0)
      .uint64(123)
      .uint32((10 << 3) | 1)
      .fixed64(1)
      .uint32((11 << 3) | 5)
      .fixed32(1)
      .uint32((12 << 3) | 2)
      .bytes(Uint8Array.of(1, 2));
    const unknown = w.finish();
    const b = Buffer.concat([unknown, encodeRequest('d', [{ entries: [['k', 'v']] }])]);
    expect(decodeRateLimitRequest(b, limits)).toEqual({ domain: 'd', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }], hitsAddend: 0 });
  });

  it('refuses malformed input with InvalidRequestError, whatever the cut or corruption', () => {
    const random = prng('malformed');
    for (let i = 0; i < 200; i++) {
      const b = Buffer.from(randomRequest(`cut-${i}`));
      const cut = b.subarray(0, random.int(0, b.length - 1));
      const flipped = Buffer.from(b);
      flipped[random.int(0, b.length - 1)] = random.int(0, 255);
      for (const input of [cut, flipped]) {
        try {
          decodeRateLimitRequest(input, limits);
        } catch (err) {
          expect(err, `${input.toString('hex')}: ${String(err)}`).toBeInstanceOf(RateLimitError);
        }
      }
    }
    const malformed: [string, number[]][] = [
      ['truncated varint', [0x18, 0x80]],
      ['length past the end', [0x0a, 0x05, 0x61]],
      ['field number 0', [0x00, 0x01]],
      ['wire type 3', [0x1b]],
      ['wire type', [0x08, 0x01]], // domain (1) sent as a varint
      ['longer than 10 bytes', [0x18, ...new Array<number>(11).fill(0xff), 0x01]],
    ];
    for (const [message, b] of malformed) {
      expect(() => decodeRateLimitRequest(Uint8Array.from(b), limits)).toThrow(InvalidRequestError);
      expect(() => decodeRateLimitRequest(Uint8Array.from(b), limits)).toThrow(message);
    }
  });

  it('stops at the first descriptor past the limit, before reading the rest', () => {
    const many = encodeRequest(
      'd',
      Array.from({ length: limits.maxDescriptors + 1 }, () => ({ entries: [['k', 'v']] })),
    );
    // Garbage after the 65th descriptor: had the decoder gone on, it would report a malformed message.
    const b = Buffer.concat([many, Buffer.from([0x12, 0x7f])]);
    expect(() => decodeRateLimitRequest(b, limits)).toThrow(RequestTooLargeError);
    expect(() => decodeRateLimitRequest(b, limits)).toThrow('request has more than 64 descriptors (MAX_REQUEST_DESCRIPTORS)');
  });

  it('checks entry counts and key lengths from the wire; a long value is decoded (decided, never refused)', () => {
    const entries = (n: number) => Array.from({ length: n }, (_, i) => [`k${i}`, 'v'] as [string, string]);
    expect(() => decodeRateLimitRequest(encodeRequest('d', [{ entries: entries(16) }]), limits)).not.toThrow();
    expect(() => decodeRateLimitRequest(encodeRequest('d', [{ entries: [['a', 'b']] }, { entries: entries(17) }]), limits)).toThrow(
      'descriptors[1] has more than 16 entries (MAX_DESCRIPTOR_ENTRIES)',
    );
    expect(() => decodeRateLimitRequest(encodeRequest('d', [{ entries: [['k'.repeat(257), 'v']] }]), limits)).toThrow(
      'descriptors[0].entries[0].key is 257 bytes; at most 256 are allowed (MAX_KEY_BYTES)',
    );
    expect(decodeRateLimitRequest(encodeRequest('d', [{ entries: [['k', '✓'.repeat(1366)]] }]), limits).descriptors[0]!.entries[0]!.value).toBe(
      '✓'.repeat(1366),
    );
    expect(() => decodeRateLimitRequest(encodeRequest('d'.repeat(257), [{ entries: [['k', 'v']] }]), limits)).toThrow('domain is 257 bytes');
  });

  it('names the offending key by its own index; reports a long value and raises a hits_addend above the bound to 2^32 - 1 (checkRequest)', () => {
    const bytes = encodeRequest('d', [
      { entries: [['a', 'b']] },
      {
        entries: [
          ['a', 'b'],
          ['k'.repeat(257), 'v'],
          ['c', 'd'],
        ],
      },
    ]);
    expect(() => decodeRateLimitRequest(bytes, limits)).toThrow('descriptors[1].entries[1].key is 257 bytes');
    const request = decodeRateLimitRequest(
      encodeRequest('d', [
        { entries: [['a', 'b']] },
        {
          entries: [
            ['a', 'b'],
            ['k', 'v'.repeat(4097)],
          ],
        },
      ]),
      limits,
    );
    const seen: string[] = [];
    expect(checkRequest(request, limits, (f) => seen.push(f))).toBe(request);
    expect(seen).toEqual(['value']);
    const hits = checkRequest(
      { ...request, descriptors: [request.descriptors[0]!, { ...request.descriptors[1]!, hitsAddend: 2 ** 33 }] },
      { ...limits, maxHitsAddend: 1000 },
      (f) => seen.push(f),
    );
    expect(hits.descriptors.map((d) => d.hitsAddend)).toEqual([undefined, 4_294_967_295]);
    expect(seen).toEqual(['value', 'value', 'hits_addend']);
  });

  it('reads is_negative_hits (RateLimitDescriptor field 4, Envoy 1.38+) as a refund, over gRPC and /json', () => {
    const request = decodeRateLimitRequest(
      encodeRequest('d', [{ entries: [['k', 'v']], hitsAddend: 5, negative: true }, { entries: [['k', 'w']] }]),
      DEFAULT_REQUEST_LIMITS,
    );
    expect(request.descriptors.map((d) => [d.hitsAddend, d.negativeHits])).toEqual([
      [5, true],
      [undefined, undefined],
    ]);
    const json = requestFromJson('{"domain":"d","descriptors":[{"entries":[{"key":"k","value":"v"}],"hitsAddend":5,"isNegativeHits":true}]}');
    expect(json.descriptors[0]).toMatchObject({ hitsAddend: 5, negativeHits: true });
    expect(() => requestFromJson('{"domain":"d","descriptors":[{"entries":[],"is_negative_hits":"yes"}]}')).toThrow(
      'descriptors[0].isNegativeHits: expected true or false',
    );
  });
});
