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
import { decodeEscaped } from '../vocab/bytes.js';
import { InvalidRequestError } from '../vocab/errors.js';
import { checkDescriptorCount, checkEntryCount, checkKeyBytes, type RequestLimits } from '../vocab/request-limits.js';
import type { DescriptorEntry, RateLimitRequest, RequestDescriptor } from '../vocab/types.js';
import { requestDescriptor, unitFromWire } from './wire.js';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;


/**
 * A cursor over one message. Allocation is kept visible: a tag's field number is returned and its wire type
 * left in `type`, a span's end in `pos`, and the path for error messages is built from the parent only when
 * an error needs it (no arrays or closures per field).
 */
class Reader {
  pos: number;
  /** The wire type of the tag read last. */
  type = 0;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
    private readonly parent: Reader | undefined,
    /** This message's field name as it reads after the parent's path (e.g. `.entries`). */
    private readonly name: string,
    /** Its index in a repeated field, or -1. */
    private readonly index: number,
  ) {
    this.pos = start;
  }

  get path(): string {
    const own = this.index >= 0 ? `${this.name}[${this.index}]` : this.name;
    return this.parent === undefined ? own : `${this.parent.path}${own}`;
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

  /** Moves past a length-delimited field: returns where its content starts (it ends at the new `pos`). */
  span(): number {
    const len = this.varint();
    if (len > this.end - this.pos) this.malformed('length past the end of the message');
    const start = this.pos;
    this.pos += len;
    return start;
  }

  /** Reads the next tag: returns its field number, leaves its wire type in `type`. */
  tag(): number {
    const tag = this.varint();
    const field = Math.floor(tag / 8);
    if (field === 0) this.malformed('field number 0');
    this.type = tag % 8;
    return field;
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

  /** A reader over the length-delimited field at `pos` (moving past it). */
  sub(name: string, index = -1): Reader {
    const start = this.span();
    return new Reader(this.buf, start, this.pos, this, name, index);
  }
}

function entry(r: Reader, limits: RequestLimits): DescriptorEntry {
  let key = '';
  let value = '';
  while (r.pos < r.end) {
    const field = r.tag();
    const type = r.type;
    if (field === 1 || field === 2) {
      r.expect(LEN, type, field === 1 ? 'key' : 'value');
      const s = r.span();
      const e = r.pos;
      // A key's length first, from the prefix: an oversized key is never decoded. A long value is decoded and
      // decided (core/request-limits.ts): a client chooses it, and an error answer would leave it unlimited.
      if (field === 1 && e - s > limits.maxKeyBytes) checkKeyBytes(e - s, () => `${r.path}.key`, limits);
      const text = decodeEscaped(r.buf, s, e);
      if (field === 1) key = text;
      else value = text;
    } else r.skip(type);
  }
  return { key, value };
}

function descriptor(r: Reader, index: number, limits: RequestLimits): RequestDescriptor {
  const entries: DescriptorEntry[] = [];
  let limit: { requestsPerUnit: number; unitNumber: number } | undefined;
  let hitsAddend: number | undefined;
  let negative = false;
  while (r.pos < r.end) {
    const field = r.tag();
    const type = r.type;
    if (field === 1) {
      r.expect(LEN, type, 'entries');
      const n = entries.length;
      checkEntryCount(n + 1, index, limits);
      entries.push(entry(r.sub('.entries', n), limits));
    } else if (field === 2) {
      r.expect(LEN, type, 'limit');
      const o = r.sub('.limit');
      const l = (limit ??= { requestsPerUnit: 0, unitNumber: 0 }); // a repeated message merges
      while (o.pos < o.end) {
        const f = o.tag();
        const t = o.type;
        if (f === 1) {
          o.expect(VARINT, t, 'requests_per_unit');
          l.requestsPerUnit = o.varint() % 2 ** 32;
        } else if (f === 2) {
          o.expect(VARINT, t, 'unit');
          l.unitNumber = o.varint(); // wire.ts names it (7 is WEEK; UNKNOWN and unknown numbers leave the override out)
        } else o.skip(t);
      }
    } else if (field === 3) {
      r.expect(LEN, type, 'hits_addend');
      const h = r.sub('.hits_addend');
      hitsAddend ??= 0; // present, even empty (UInt64Value has presence)
      while (h.pos < h.end) {
        const f = h.tag();
        const t = h.type;
        if (f === 1) {
          h.expect(VARINT, t, 'value');
          hitsAddend = Math.min(h.varint(), Number.MAX_SAFE_INTEGER);
        } else h.skip(t);
      }
    } else if (field === 4) {
      r.expect(VARINT, type, 'is_negative_hits');
      negative = r.varint() !== 0;
    } else r.skip(type);
  }
  return requestDescriptor(entries, limit === undefined ? undefined : { requestsPerUnit: limit.requestsPerUnit, unit: unitFromWire(limit.unitNumber) }, hitsAddend, negative);
}

/** Bytes → the engine's request; throws InvalidRequestError (malformed) or RequestTooLargeError. */
export function decodeRateLimitRequest(bytes: Uint8Array, limits: RequestLimits): RateLimitRequest {
  const r = new Reader(bytes, 0, bytes.length, undefined, '', -1);
  let domain = '';
  let hitsAddend = 0;
  const descriptors: RequestDescriptor[] = [];
  while (r.pos < r.end) {
    const field = r.tag();
    const type = r.type;
    if (field === 1) {
      r.expect(LEN, type, 'domain');
      const s = r.span();
      const e = r.pos;
      checkKeyBytes(e - s, 'domain', limits);
      domain = decodeEscaped(bytes, s, e);
    } else if (field === 2) {
      r.expect(LEN, type, 'descriptors');
      const n = descriptors.length;
      checkDescriptorCount(n + 1, limits);
      descriptors.push(descriptor(r.sub('descriptors', n), n, limits));
    } else if (field === 3) {
      r.expect(VARINT, type, 'hits_addend');
      hitsAddend = r.varint() % 2 ** 32; // uint32: the low 32 bits, as protobuf decoders do
    } else r.skip(type);
  }
  return { domain, descriptors, hitsAddend };
}
