/**
 * Malformed RateLimitRequest bodies for the fuzz test, built from Envoy's wire facts
 * (RateLimitRequest: domain 1 string, descriptors 2 message, hits_addend 3 uint32; RateLimitDescriptor:
 * entries 1, limit 2, hits_addend 3 UInt64Value; Entry: key 1, value 2). Each generator takes the seeded
 * PRNG and returns the message bytes and the name of the mutation (for failure messages).
 */
import { encodeRequest } from './raw-rls.js';
import { envoyRequest } from './envoy-traffic.js';
import type { Prng } from './prng.js';

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const tag = (field: number, wire: number) => varint((field << 3) | wire);
const len = (field: number, bytes: ArrayLike<number>) => [...tag(field, 2), ...varint(bytes.length), ...Array.from(bytes)];

function validBytes(r: Prng): Uint8Array {
  const q = envoyRequest(r);
  return encodeRequest(q.domain, q.descriptors, q.hitsAddend);
}

function randomBytes(r: Prng, n: number): number[] {
  return Array.from({ length: n }, () => r.int(0, 255));
}

/** Byte strings that are not valid UTF-8 (lone continuation, overlong, surrogate, truncated, 0xff). */
const INVALID_UTF8 = [[0xff], [0xfe, 0xff], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x61, 0xc3]];

type Gen = (r: Prng) => number[];

const GENERATORS: Record<string, Gen> = {
  'random bytes': (r) => randomBytes(r, r.int(0, 300)),
  truncated: (r) => {
    const v = validBytes(r);
    return Array.from(v.subarray(0, r.int(0, Math.max(0, v.length - 1))));
  },
  'bytes flipped': (r) => {
    const v = Array.from(validBytes(r));
    for (let i = r.int(1, 5); i > 0 && v.length > 0; i--) v[r.int(0, v.length - 1)] = r.int(0, 255);
    return v;
  },
  'bytes inserted': (r) => {
    const v = Array.from(validBytes(r));
    v.splice(r.int(0, v.length), 0, ...randomBytes(r, r.int(1, 8)));
    return v;
  },
  'wrong wire type': (r) => {
    // A known field with another wire type (varint / fixed64 / fixed32 / group / length), then the rest valid.
    const field = r.pick([1, 2, 3]);
    const wire = r.pick([0, 1, 5, 2, 3, 4].filter((w) => w !== (field === 3 ? 0 : 2)));
    const payload =
      wire === 0 ? varint(r.int(0, 1e9)) : wire === 1 ? randomBytes(r, 8) : wire === 5 ? randomBytes(r, 4) : wire === 2 ? [...varint(3), 1, 2, 3] : [];
    return [...tag(field, wire), ...payload, ...Array.from(validBytes(r))];
  },
  'wrong wire type inside a descriptor': (r) => [
    ...len(1, [0x65, 0x64, 0x67, 0x65]),
    ...len(2, [...tag(r.pick([1, 2, 3]), r.pick([0, 1, 5])), ...randomBytes(r, 8)]),
  ],
  'huge length': (r) => [...tag(r.pick([1, 2]), 2), ...varint(r.pick([2 ** 31 - 1, 2 ** 32 - 1, 2 ** 35, 2 ** 62])), ...randomBytes(r, r.int(0, 20))],
  'overlong varint': (r) => [...tag(3, 0), ...Array.from({ length: r.int(11, 40) }, () => 0xff), 0x01],
  'unterminated group': (r) => [...tag(r.int(4, 99), 3), ...Array.from(validBytes(r))],
  'deep nesting (groups)': (r) => {
    const depth = r.int(101, 3000); // protobufjs stops at 100; deeper only costs bytes
    return [...new Array<number>(depth).fill(tag(5, 3)[0]!), ...new Array<number>(depth).fill(tag(5, 4)[0]!)];
  },
  'deep nesting (entries)': (r) => {
    // Entry in entry in entry: decoders that take field 1 of an Entry as a message recurse. Built inside out
    // from the lengths alone (one copy), so deep ones stay cheap to make.
    const leaf = [...len(1, [0x6b]), ...len(2, [0x76])];
    const heads: number[][] = [];
    let size = leaf.length;
    for (let i = r.int(10, 300); i > 0; i--) {
      const head = [...tag(1, 2), ...varint(size)];
      heads.push(head);
      size += head.length;
    }
    const nested = [...heads.reverse().flat(), ...leaf];
    return [...len(1, [0x65, 0x64, 0x67, 0x65]), ...len(2, nested)];
  },
  'invalid UTF-8': (r) => {
    const bad = () => [...Array.from(new TextEncoder().encode(`v${r.int(0, 9)}`)), ...r.pick(INVALID_UTF8)];
    const where = r.int(0, 2);
    const domain = where === 0 ? bad() : Array.from(new TextEncoder().encode('edge'));
    const key = where === 1 ? bad() : Array.from(new TextEncoder().encode('remote_address'));
    const value = where === 2 ? bad() : Array.from(new TextEncoder().encode('10.0.0.1'));
    return [...len(1, domain), ...len(2, len(1, [...len(1, key), ...len(2, value)]))];
  },
  'extreme numbers': (r) => [
    ...len(1, [0x65, 0x64, 0x67, 0x65]),
    ...len(2, [
      ...len(1, [...len(1, [0x70, 0x6c, 0x61, 0x6e]), ...len(2, [0x66, 0x72, 0x65, 0x65])]),
      ...len(2, [...tag(1, 0), ...varint(r.pick([0, 2 ** 32 - 1, 2 ** 63])), ...tag(2, 0), ...varint(r.pick([0, 7, 99, 2 ** 31]))]),
      ...len(3, [...tag(1, 0), ...varint(r.pick([0n, 2n ** 64n - 1n, 2n ** 53n + 1n]))]),
    ]),
    ...tag(3, 0),
    ...varint(r.pick([2 ** 32 - 1, 2 ** 31, 0])),
  ],
  'empty or partial shape': (r) =>
    r.pick([[], len(1, []), len(2, []), [...len(1, [0x65]), ...len(2, len(1, []))], [...len(1, [0x65]), ...len(2, len(1, len(1, [])))]]),
};

export const MUTATIONS = Object.keys(GENERATORS);

/** One malformed message (not yet framed): a random mutation from the table above. */
export function malformed(r: Prng): { kind: string; bytes: Buffer } {
  const kind = r.pick(MUTATIONS);
  return { kind, bytes: Buffer.from(GENERATORS[kind]!(r)) };
}

/** Messages too big for any sane limit: `descriptors` Envoy-shaped descriptors, or `bytes` of one long value. */
export function oversized(r: Prng, kind: 'descriptors' | 'value', size: number): Buffer {
  if (kind === 'value') return Buffer.from(encodeRequest('edge', [{ entries: [['remote_address', 'x'.repeat(size)]] }]));
  return Buffer.from(
    encodeRequest(
      'edge',
      Array.from({ length: size }, (_, i) => ({ entries: [['remote_address', `10.${i % 250}.${r.int(0, 255)}.1`]] as [string, string][] })),
    ),
  );
}
