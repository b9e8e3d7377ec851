/**
 * Decodes a RateLimitRequest from its protobuf bytes ourselves, instead of letting grpc-js do it, because:
 *
 * - a decode failure inside grpc-js becomes INTERNAL; here it is an InvalidRequestError (INVALID_ARGUMENT);
 * - the request limits are checked while reading (descriptor and entry counts, key lengths from their length
 *   prefixes), so an oversized request is refused before any per-descriptor work (long values are decided:
 *   core/request-limits.ts);
 * - descriptor keys and values are decoded from their bytes with the injective escape of core/bytes.ts:
 *   protobuf `string` and `bytes` share the wire encoding, and a lossy UTF-8 decode would make distinct
 *   non-UTF-8 values share a counter.
 *
 * Field numbers are Envoy's (shared/protocol.md §1–2). Unknown fields are skipped; a known field with the
 * wrong wire type, a truncated field, an over-long varint or a group is malformed.
 */
import { decodeEscaped } from '../core/bytes.js';
import { InvalidRequestError } from '../core/errors.js';
import { checkDescriptorCount, checkEntryCount, checkKeyBytes, type FieldPath, type RequestLimits } from '../core/request-limits.js';
import type { RateLimitRequest } from '../core/types.js';
import { requestFromWire, type WireDescriptor, type WireEntry, type WireRequest } from './wire.js';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;


class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
    /** Built only for an error message (see FieldPath). */
    private readonly where: FieldPath,
  ) {
    this.pos = start;
  }

  get path(): string {
    return typeof this.where === 'string' ? this.where : this.where();
  }

  malformed(what: string): never {
    throw new InvalidRequestError(`malformed RateLimitRequest: ${what} at ${this.path || 'top level'} (byte ${this.pos})`);
  }

  /** A varint as a Number (exact up to 2^53; larger values only need to compare as large). */
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.malformed('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    return this.malformed('varint longer than 10 bytes');
  }

  /** The [start, end) of a length-delimited field's content, moving past it. */
  span(): [number, number] {
    const len = this.varint();
    if (len > this.end - this.pos) this.malformed('length past the end of the message');
    const start = this.pos;
    this.pos += len;
    return [start, this.pos];
  }

  /** Reads the next tag: [field number, wire type]. */
  tag(): [number, number] {
    const tag = this.varint();
    const field = Math.floor(tag / 8);
    if (field === 0) this.malformed('field number 0');
    return [field, tag % 8];
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.varint();
    else if (wireType === LEN) this.span();
    else if (wireType === FIXED64 || wireType === FIXED32) {
      const n = wireType === FIXED64 ? 8 : 4;
      if (this.end - this.pos < n) this.malformed('truncated fixed-width field');
      this.pos += n;
    } else this.malformed(`unsupported wire type ${wireType}`);
  }

  expect(wireType: number, actual: number, field: string): void {
    if (wireType !== actual) this.malformed(`field ${field} has wire type ${actual}, expected ${wireType}`);
  }

  sub(span: [number, number], path: FieldPath): Reader {
    return new Reader(this.buf, span[0], span[1], path);
  }
}

function entry(r: Reader, limits: RequestLimits): WireEntry {
  let key = '';
  let value = '';
  while (r.pos < r.end) {
    const [field, type] = r.tag();
    if (field === 1 || field === 2) {
      r.expect(LEN, type, field === 1 ? 'key' : 'value');
      const [s, e] = r.span();
      // A key's length first, from the prefix: an oversized key is never decoded. A long value is decoded and
      // decided (core/request-limits.ts): a client chooses it, and an error answer would leave it unlimited.
      if (field === 1) checkKeyBytes(e - s, () => `${r.path}.key`, limits);
      const text = decodeEscaped(r.buf, s, e);
      if (field === 1) key = text;
      else value = text;
    } else r.skip(type);
  }
  return { key, value };
}

function descriptor(r: Reader, index: number, limits: RequestLimits): WireDescriptor {
  const entries: WireEntry[] = [];
  const out: WireDescriptor = { entries, limit: null, hits_addend: null };
  while (r.pos < r.end) {
    const [field, type] = r.tag();
    if (field === 1) {
      r.expect(LEN, type, 'entries');
      const n = entries.length;
      checkEntryCount(n + 1, index, limits);
      entries.push(entry(r.sub(r.span(), () => `${r.path}.entries[${n}]`), limits));
    } else if (field === 2) {
      r.expect(LEN, type, 'limit');
      const o = r.sub(r.span(), () => `${r.path}.limit`);
      const limit = (out.limit ??= { requests_per_unit: 0, unit: 'UNKNOWN' }); // a repeated message merges
      while (o.pos < o.end) {
        const [f, t] = o.tag();
        if (f === 1) {
          o.expect(VARINT, t, 'requests_per_unit');
          limit.requests_per_unit = o.varint() % 2 ** 32;
        } else if (f === 2) {
          o.expect(VARINT, t, 'unit');
          const n = o.varint();
          limit.unit = n; // wire.ts names it (7 is WEEK; UNKNOWN and unknown numbers leave the override out)
        } else o.skip(t);
      }
    } else if (field === 3) {
      r.expect(LEN, type, 'hits_addend');
      const h = r.sub(r.span(), () => `${r.path}.hits_addend`);
      const hits = (out.hits_addend ??= { value: 0 });
      while (h.pos < h.end) {
        const [f, t] = h.tag();
        if (f === 1) {
          h.expect(VARINT, t, 'value');
          hits.value = h.varint();
        } else h.skip(t);
      }
    } else if (field === 4) {
      r.expect(VARINT, type, 'is_negative_hits');
      out.is_negative_hits = r.varint() !== 0;
    } else r.skip(type);
  }
  return out;
}

/** Bytes → the engine's request; throws InvalidRequestError (malformed) or RequestTooLargeError. */
export function decodeRateLimitRequest(bytes: Uint8Array, limits: RequestLimits): RateLimitRequest {
  const r = new Reader(bytes, 0, bytes.length, '');
  const wire: WireRequest = { domain: '', descriptors: [], hits_addend: 0 };
  const descriptors = wire.descriptors!;
  while (r.pos < r.end) {
    const [field, type] = r.tag();
    if (field === 1) {
      r.expect(LEN, type, 'domain');
      const [s, e] = r.span();
      checkKeyBytes(e - s, 'domain', limits);
      wire.domain = decodeEscaped(bytes, s, e);
    } else if (field === 2) {
      r.expect(LEN, type, 'descriptors');
      const n = descriptors.length;
      checkDescriptorCount(n + 1, limits);
      descriptors.push(descriptor(r.sub(r.span(), () => `descriptors[${n}]`), n, limits));
    } else if (field === 3) {
      r.expect(VARINT, type, 'hits_addend');
      wire.hits_addend = r.varint() % 2 ** 32; // uint32: the low 32 bits, as protobuf decoders do
    } else r.skip(type);
  }
  return requestFromWire(wire);
}
