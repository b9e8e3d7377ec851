/**
 * The hand-written RateLimitResponse encoder against the reference path it replaces (responseToWire +
 * proto-loader/protobufjs), on random seeded decisions: both byte strings must decode to the same message.
 */
import { describe, expect, it } from 'vitest';
import { wellFormed } from '../../../src/vocab/bytes.js';
import { UNITS, type DescriptorStatus, type RateLimitDecision } from '../../../src/vocab/types.js';
import { encodeRateLimitResponse } from '../../../src/server/rls/encode-response.js';
import { loadProtos } from '../../../src/server/grpc/protos.js';
import { responseToWire } from '../../../src/server/rls/proto-objects.js';
import { prng, type Prng } from '../../support/prng.js';

const method = loadProtos().rls.ShouldRateLimit!;
const decode = (b: Buffer) => method.responseDeserialize(b) as Record<string, unknown>;
// One intended difference: proto-objects.ts passes rule names through as they are (protobufjs then writes a lone
// surrogate as invalid UTF-8); the encoder makes them well-formed like every other string.
const reference = (d: RateLimitDecision) =>
  method.responseSerialize(
    responseToWire({
      ...d,
      statuses: d.statuses.map((s) =>
        s.currentLimit?.name === undefined ? s : { ...s, currentLimit: { ...s.currentLimit, name: wellFormed(s.currentLimit.name) } },
      ),
    }),
  );

const TEXTS = ['', 'a', 'x-ratelimit-limit', 'é ü', '日本', '\ud800 lone surrogate', 'emoji 😀', 'v'.repeat(200)];

function number(r: Prng): number {
  return r.pick([0, 1, 127, 128, 16_383, 16_384, 2 ** 31 - 1, 2 ** 32 - 1, r.int(0, 1_000_000)]);
}

function status(r: Prng): DescriptorStatus {
  const withLimit = r.int(0, 3) > 0;
  return {
    code: r.pick(['OK', 'OVER_LIMIT'] as const),
    ...(withLimit
      ? {
          currentLimit: {
            requestsPerUnit: number(r),
            unit: r.int(0, 7) === 0 ? undefined : r.pick(UNITS),
            windowSeconds: 1,
            ...(r.int(0, 1) ? { name: r.pick(TEXTS) } : {}),
          },
        }
      : {}),
    limitRemaining: number(r),
    ...(r.int(0, 2) > 0 ? { durationUntilResetMs: r.pick([0, 1, 999, 1000, 1001, 59_999, r.int(0, 10 ** 9)]) } : {}),
  };
}

function value(r: Prng, depth: number): unknown {
  const kind = r.int(0, depth > 2 ? 3 : 5);
  if (kind === 0) return null;
  if (kind === 1) return r.pick([0, -1.5, 42, 1e300, 0.1]);
  if (kind === 2) return r.pick(TEXTS);
  if (kind === 3) return r.int(0, 1) === 1;
  if (kind === 4) return Array.from({ length: r.int(0, 3) }, () => value(r, depth + 1));
  return Object.fromEntries(Array.from({ length: r.int(0, 3) }, (_, i) => [`${r.pick(TEXTS)}${i}`, value(r, depth + 1)]));
}

function decision(r: Prng): RateLimitDecision {
  const headers = () => Array.from({ length: r.int(0, 4) }, () => ({ key: r.pick(TEXTS), value: r.pick(TEXTS) }));
  return {
    overallCode: r.pick(['OK', 'OVER_LIMIT'] as const),
    statuses: Array.from({ length: r.int(0, 5) }, () => status(r)),
    responseHeadersToAdd: headers(),
    requestHeadersToAdd: headers(),
    ...(r.int(0, 3) === 0 ? { rawBody: Buffer.from(r.pick(TEXTS.slice(1))) } : {}),
    ...(r.int(0, 3) === 0 ? { dynamicMetadata: (value(r, 3) as Record<string, unknown>) ?? {} } : {}),
  };
}

describe('encodeRateLimitResponse', () => {
  it('decodes to the same message as responseToWire + protobufjs on 3000 random decisions', () => {
    const r = prng('encode-response');
    for (let i = 0; i < 3000; i++) {
      const d = decision(r);
      if (d.dynamicMetadata !== undefined && (typeof d.dynamicMetadata !== 'object' || Array.isArray(d.dynamicMetadata))) continue;
      expect(decode(encodeRateLimitResponse(d)), JSON.stringify(d)).toEqual(decode(reference(d)));
    }
  });

  it('frames in place: flag 0, big-endian length, then the same bytes', () => {
    const d = decision(prng('frame'));
    const framed = encodeRateLimitResponse(d, 5);
    const plain = encodeRateLimitResponse(d);
    expect(framed[0]).toBe(0);
    expect(framed.readUInt32BE(1)).toBe(plain.length);
    expect(framed.subarray(5)).toEqual(plain);
  });
});
