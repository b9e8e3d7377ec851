/**
 * The hand-written doorman.Capacity codec (wire-decode.ts, wire-encode.ts) against protobufjs through
 * proto-loader, the codec it replaced: random requests decode to the same objects, random responses encode
 * to the same bytes, and a request missing a required field, cut short or otherwise malformed is refused with
 * a WireError (never another exception). Strings are well-formed Unicode (lone surrogates are written
 * differently by protobufjs's own UTF-8 writer and never come out of a decoded request).
 */
import { describe, expect, it } from 'vitest';
import { idBytes, idText } from '../../../src/capacity/ids.js';
import { methodCodec, type CapacityMethod } from '../../../src/capacity/doorman-messages.js';
import type * as M from '../../../src/capacity/doorman-messages.js';
import {
  decodeDiscoveryRequest,
  decodeGetCapacityRequest,
  decodeGetServerCapacityRequest,
  decodeReleaseCapacityRequest,
  WireError,
} from '../../../src/capacity/wire-decode.js';
import {
  encodeDiscoveryResponse,
  encodeGetCapacityResponse,
  encodeGetServerCapacityResponse,
  encodeReleaseCapacityResponse,
} from '../../../src/capacity/wire-encode.js';
import { prng, type Prng } from '../../support/prng.js';

const CASES = 2_000;

function text(r: Prng): string {
  const alphabet = ['a', 'Z', '0', '-', '/', '*', 'é', 'ß', '中', '😀', ' ', '\u0000'];
  const n = r.pick([0, 1, 5, 30, 200]);
  let s = '';
  for (let i = 0; i < n; i++) s += r.pick(alphabet);
  return s;
}

function int64(r: Prng): number {
  return r.pick([0, 1, 127, 128, 16_383, 16_384, 2 ** 31, 2 ** 32 + 5, 2 ** 53 - 1, -1, -128, -(2 ** 40), r.int(0, 1e9), -r.int(1, 1e9)]);
}

function double(r: Prng): number {
  return r.pick([0, -0, 1, 0.5, 1e-300, 1e300, Infinity, -Infinity, NaN, 120, 69.69, r.next() * 1000, -r.next()]);
}

function lease(r: Prng): M.Lease {
  return { expiry_time: int64(r), refresh_interval: int64(r), capacity: double(r) };
}

function many<T>(r: Prng, make: () => T): T[] {
  return Array.from({ length: r.pick([0, 1, 2, 5]) }, make);
}

const requests: Record<CapacityMethod, (r: Prng) => object> = {
  Discovery: () => ({}),
  GetCapacity: (r) => ({
    client_id: text(r),
    resource: many(r, () => ({ resource_id: text(r), priority: int64(r), ...(r.chance(0.5) ? { has: lease(r) } : {}), wants: double(r) })),
  }),
  GetServerCapacity: (r) => ({
    server_id: text(r),
    resource: many(r, () => ({
      resource_id: text(r),
      ...(r.chance(0.5) ? { has: lease(r) } : {}),
      wants: many(r, () => ({ priority: int64(r), num_clients: int64(r), wants: double(r) })),
    })),
  }),
  ReleaseCapacity: (r) => ({ client_id: text(r), resource_id: many(r, () => text(r)) }),
};

const decoders: Record<CapacityMethod, (b: Buffer) => unknown> = {
  Discovery: decodeDiscoveryRequest,
  GetCapacity: decodeGetCapacityRequest,
  GetServerCapacity: decodeGetServerCapacityRequest,
  ReleaseCapacity: decodeReleaseCapacityRequest,
};

const mastership = (r: Prng): object => (r.chance(0.3) ? { mastership: r.chance(0.5) ? { master_address: text(r) } : {} } : {});

const responses: Record<CapacityMethod, { make: (r: Prng) => object; encode: (m: never) => Buffer }> = {
  Discovery: { make: (r) => ({ mastership: r.chance(0.8) ? { master_address: text(r) } : {}, is_master: r.chance(0.5) }), encode: encodeDiscoveryResponse },
  GetCapacity: {
    make: (r) => ({
      response: many(r, () => ({ resource_id: text(r), gets: lease(r), ...(r.chance(0.7) ? { safe_capacity: double(r) } : {}) })),
      ...mastership(r),
    }),
    encode: encodeGetCapacityResponse,
  },
  GetServerCapacity: {
    make: (r) => ({
      response: many(r, () => ({
        resource_id: text(r),
        gets: lease(r),
        ...(r.chance(0.7)
          ? {
              algorithm: {
                kind: r.pick(['NO_ALGORITHM', 'STATIC', 'PROPORTIONAL_SHARE', 'FAIR_SHARE']),
                lease_length: int64(r),
                refresh_interval: int64(r),
                parameters: many(r, () => ({ name: text(r), ...(r.chance(0.5) ? { value: text(r) } : {}) })),
                ...(r.chance(0.5) ? { learning_mode_duration: int64(r) } : {}),
              },
            }
          : {}),
        ...(r.chance(0.7) ? { safe_capacity: double(r) } : {}),
      })),
      ...mastership(r),
    }),
    encode: encodeGetServerCapacityResponse,
  },
  ReleaseCapacity: { make: (r) => mastership(r), encode: encodeReleaseCapacityResponse },
};

/** protobufjs's decode, or its error. */
function reference(method: CapacityMethod, bytes: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: methodCodec(method).decode(bytes) };
  } catch {
    return { ok: false };
  }
}

/** A decoded request with its ids as text (client_id, server_id, resource_id, wherever they are). */
function textIds(m: unknown): unknown {
  if (typeof m !== 'object' || m === null) return m;
  if (Array.isArray(m)) return m.map(textIds);
  return Object.fromEntries(
    Object.entries(m).map(([k, v]) => [
      k,
      ['client_id', 'server_id', 'resource_id'].includes(k) ? (Array.isArray(v) ? v.map((x: string) => idText(x)) : idText(v as string)) : textIds(v),
    ]),
  );
}

describe('ids are bytes', () => {
  it('distinct invalid UTF-8 ids decode to distinct ids and encode back to their bytes', () => {
    const release = (id: Buffer) => Buffer.concat([Buffer.from([0x0a, id.length]), id]);
    const a = decodeReleaseCapacityRequest(release(Buffer.from([0x78, 0xff]))).client_id;
    const b = decodeReleaseCapacityRequest(release(Buffer.from([0x78, 0xfe]))).client_id;
    expect(a).not.toBe(b);
    expect(idBytes(a)).toEqual(Buffer.from([0x78, 0xff]));
    const id = decodeReleaseCapacityRequest(release(Buffer.from('in-26\xff\xfe', 'latin1'))).client_id;
    const bytes = encodeGetCapacityResponse({ response: [{ resource_id: id, gets: { expiry_time: 1, refresh_interval: 1, capacity: 1 } }] });
    expect(bytes.includes(Buffer.from('in-26\xff\xfe', 'latin1'))).toBe(true);
  });
});

describe('doorman.Capacity wire codec', () => {
  for (const method of Object.keys(requests) as CapacityMethod[]) {
    it(`${method}: random requests decode as protobufjs decodes them`, () => {
      const r = prng(`decode ${method}`);
      for (let i = 0; i < CASES; i++) {
        const bytes = methodCodec(method).encodeRequest(requests[method](r));
        expect(decoders[method](bytes)).toEqual(methodCodec(method).decode(bytes));
      }
    });

    it(`${method}: random responses encode to protobufjs's bytes`, () => {
      const r = prng(`encode ${method}`);
      for (let i = 0; i < CASES; i++) {
        const message = responses[method].make(r);
        const ours = responses[method].encode(message as never);
        expect(ours.toString('hex'), JSON.stringify(message)).toBe(methodCodec(method).encode(message).toString('hex'));
      }
    });

    it(`${method}: cut or corrupted requests are refused with a WireError, or decode as protobufjs decodes them`, () => {
      const r = prng(`fuzz ${method}`);
      for (let i = 0; i < CASES; i++) {
        const bytes = Buffer.from(methodCodec(method).encodeRequest(requests[method](r)));
        const broken = r.chance(0.5) ? bytes.subarray(0, r.int(0, bytes.length)) : bytes;
        for (let k = r.int(0, 3); k > 0 && broken.length > 0; k--) broken[r.int(0, broken.length - 1)] = r.int(0, 255);
        let ours: unknown;
        try {
          ours = decoders[method](broken);
        } catch (err) {
          expect(err).toBeInstanceOf(WireError);
          continue;
        }
        const theirs = reference(method, broken);
        // Where we accept a message, every known field had its wire type, so protobufjs reads the same, but for
        // ids that are not UTF-8: we keep their bytes, protobufjs reads U+FFFD (idText shows them so).
        expect(theirs.ok).toBe(true);
        if (theirs.ok) expect(textIds(ours)).toEqual(theirs.value);
      }
    });
  }

  it('refuses a message without a required field as protobufjs does ("missing required \'…\'")', () => {
    const lease = Buffer.from('0801', 'hex'); // expiry_time only
    const resource = Buffer.concat([Buffer.from('0a0172', 'hex'), Buffer.from('1001', 'hex'), Buffer.from('1a02', 'hex'), lease]); // no wants
    const request = Buffer.concat([Buffer.from('0a0163', 'hex'), Buffer.from([0x12, resource.length]), resource]);
    expect(() => decodeGetCapacityRequest(request)).toThrow("missing required 'refresh_interval'");
    expect(() => methodCodec('GetCapacity').decode(request)).toThrow("missing required 'refresh_interval'");
    expect(() => decodeGetCapacityRequest(Buffer.alloc(0))).toThrow("missing required 'client_id'");
    expect(() => decodeReleaseCapacityRequest(Buffer.from('1201', 'hex'))).toThrow(WireError);
  });

  it('skips unknown fields, groups included, and refuses a known field with the wrong wire type', () => {
    // Field 31 as a varint, a fixed64, an empty length-delimited field, a group holding a varint, a fixed32.
    const unknown = Buffer.from(['f80101', 'f901' + '00'.repeat(8), 'fa0100', 'fb01' + '08ff01' + 'fc01', 'fd01' + '00'.repeat(4)].join(''), 'hex');
    const request = Buffer.concat([Buffer.from('0a0163', 'hex'), unknown]);
    expect(decodeGetCapacityRequest(request)).toEqual({ client_id: 'c', resource: [] });
    expect(decodeGetCapacityRequest(request)).toEqual(methodCodec('GetCapacity').decode(request));
    expect(() => decodeGetCapacityRequest(Buffer.from('0801', 'hex'))).toThrow('field 1 has wire type 0, expected 2');
  });
});
