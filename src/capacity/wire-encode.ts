/**
 * The doorman.Capacity responses encoded by hand: sizes first, then one buffer written once (ProtoWriter), the
 * same bytes protobufjs writes for the same object (test/unit/capacity/capacity-wire.test.ts compares them): fields in
 * number order, every `required` field written, an optional one only when set (not null or undefined), int64 as
 * protobufjs's fromObject makes it (truncated towards zero; NaN is 0; negatives as 10-byte two's complement).
 */
import { int64Size as wireInt64Size, ProtoWriter, lenFieldSize, utf8Length, varintSize } from '../protobuf/writer.js';
import { idByteLength, writeId } from './ids.js';
import type * as M from './doorman-messages.js';

/** Algorithm.Kind by name (doorman-messages.ts carries the name, as proto-loader does with enums: String). */
const KIND_NUMBER: Partial<Record<string, number>> = { NO_ALGORITHM: 0, STATIC: 1, PROPORTIONAL_SHARE: 2, FAIR_SHARE: 3 };

/** The int64 protobufjs's fromObject makes of a number: truncated, NaN 0, clamped to the int64 range. */
function int64Value(n: number): number {
  return Number.isNaN(n) ? 0 : Math.trunc(n);
}

function int64Size(n: number): number {
  return wireInt64Size(int64Value(n));
}

function writeInt64(w: ProtoWriter, field: number, n: number): void {
  w.tag(field, 0);
  w.int64(int64Value(n));
}

/**
 * UTF-8 length of a string: counted in JS for short ASCII ones (ids, addresses), where a native call costs
 * more than the string.
 */
function textLength(s: string): number {
  if (s.length > 64) return utf8Length(s);
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return utf8Length(s);
  return s.length;
}

/** A string field of `byteLength` bytes (textLength), ASCII copied in JS. */
function writeText(w: ProtoWriter, field: number, s: string, byteLength: number): void {
  if (byteLength !== s.length || byteLength > 64) {
    w.string(field, s, byteLength);
    return;
  }
  w.tag(field, 2);
  w.varint(byteLength);
  const buf = w.buf;
  let pos = w.pos;
  for (let i = 0; i < byteLength; i++) buf[pos++] = s.charCodeAt(i);
  w.pos = pos;
}

const set = <T>(v: T | null | undefined): v is T => v !== undefined && v !== null;

function leaseBytes(l: M.Lease): number {
  return 1 + int64Size(l.expiry_time) + 1 + int64Size(l.refresh_interval) + 9;
}

function writeLease(w: ProtoWriter, field: number, l: M.Lease, size: number): void {
  w.header(field, size);
  writeInt64(w, 1, l.expiry_time);
  writeInt64(w, 2, l.refresh_interval);
  w.double(3, Number(l.capacity));
}

function mastershipSize(m: M.Mastership): number {
  return set(m.master_address) ? lenFieldSize(textLength(m.master_address)) : 0;
}

function writeMastership(w: ProtoWriter, field: number, m: M.Mastership, size: number): void {
  w.header(field, size);
  if (set(m.master_address)) writeText(w, 1, m.master_address, textLength(m.master_address));
}

/** Per-entry sizes of the response being encoded (encoding is synchronous, so one scratch set serves all). */
const entrySizes: number[] = [];
const idSizes: number[] = [];
const leaseSizes: number[] = [];

/**
 * GetCapacityResponse and GetServerCapacityResponse alike: `response` (field 1) entries of resource_id (1),
 * gets (2) and what `restSize` / `writeRest` add, then the optional mastership (2).
 */
function encodeResponses<T extends { resource_id: string; gets: M.Lease }>(
  items: readonly T[],
  mastership: M.Mastership | undefined,
  restSize: (item: T) => number,
  writeRest: (w: ProtoWriter, item: T) => void,
): Buffer {
  let total = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const idSize = idByteLength(item.resource_id);
    const leaseSize = leaseBytes(item.gets);
    const size = lenFieldSize(idSize) + lenFieldSize(leaseSize) + restSize(item);
    idSizes[i] = idSize;
    leaseSizes[i] = leaseSize;
    entrySizes[i] = size;
    total += lenFieldSize(size);
  }
  const ms = set(mastership) ? mastershipSize(mastership) : -1;
  const w = new ProtoWriter(total + (ms >= 0 ? lenFieldSize(ms) : 0));
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    w.header(1, entrySizes[i]!);
    w.tag(1, 2);
    w.varint(idSizes[i]!);
    w.pos += writeId(w.buf, w.pos, item.resource_id);
    writeLease(w, 2, item.gets, leaseSizes[i]!);
    writeRest(w, item);
  }
  if (ms >= 0) writeMastership(w, 2, mastership!, ms);
  return w.pos === w.buf.length ? w.buf : w.buf.subarray(0, w.pos);
}

export function encodeGetCapacityResponse(m: M.GetCapacityResponse): Buffer {
  return encodeResponses(
    m.response,
    m.mastership,
    (r) => (set(r.safe_capacity) ? 9 : 0),
    (w, r) => {
      if (set(r.safe_capacity)) w.double(3, Number(r.safe_capacity));
    },
  );
}

function parameterSize(p: M.NamedParameter): number {
  return lenFieldSize(textLength(p.name)) + (set(p.value) ? lenFieldSize(textLength(p.value)) : 0);
}

function algorithmSize(a: M.Algorithm): number {
  let size = 1 + varintSize(KIND_NUMBER[a.kind] ?? 0) + 1 + int64Size(a.lease_length) + 1 + int64Size(a.refresh_interval);
  for (const p of a.parameters) size += lenFieldSize(parameterSize(p));
  if (set(a.learning_mode_duration)) size += 1 + int64Size(a.learning_mode_duration);
  return size;
}

function writeAlgorithm(w: ProtoWriter, a: M.Algorithm, size: number): void {
  w.header(3, size);
  w.tag(1, 0);
  w.varint(KIND_NUMBER[a.kind] ?? 0);
  writeInt64(w, 2, a.lease_length);
  writeInt64(w, 3, a.refresh_interval);
  for (const p of a.parameters) {
    w.header(4, parameterSize(p));
    writeText(w, 1, p.name, textLength(p.name));
    if (set(p.value)) writeText(w, 2, p.value, textLength(p.value));
  }
  if (set(a.learning_mode_duration)) writeInt64(w, 5, a.learning_mode_duration);
}

export function encodeGetServerCapacityResponse(m: M.GetServerCapacityResponse): Buffer {
  return encodeResponses(
    m.response,
    m.mastership,
    (r) => (set(r.algorithm) ? lenFieldSize(algorithmSize(r.algorithm)) : 0) + (set(r.safe_capacity) ? 9 : 0),
    (w, r) => {
      if (set(r.algorithm)) writeAlgorithm(w, r.algorithm, algorithmSize(r.algorithm));
      if (set(r.safe_capacity)) w.double(4, Number(r.safe_capacity));
    },
  );
}

export function encodeReleaseCapacityResponse(m: M.ReleaseCapacityResponse): Buffer {
  if (!set(m.mastership)) return Buffer.alloc(0);
  const ms = mastershipSize(m.mastership);
  const w = new ProtoWriter(lenFieldSize(ms));
  writeMastership(w, 1, m.mastership, ms);
  return w.buf;
}

export function encodeDiscoveryResponse(m: M.DiscoveryResponse): Buffer {
  const ms = mastershipSize(m.mastership);
  const w = new ProtoWriter(lenFieldSize(ms) + 2);
  writeMastership(w, 1, m.mastership, ms);
  w.tag(2, 0);
  w.varint(m.is_master ? 1 : 0);
  return w.buf;
}
