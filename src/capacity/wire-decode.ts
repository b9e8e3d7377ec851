/**
 * The doorman.Capacity requests decoded by hand, straight into the plain objects of messages.ts: the same
 * objects protobufjs (through proto-loader, DOORMAN_LOADER_OPTIONS) makes of the same bytes, without its
 * generic reader, its message classes and the toObject copy (test/unit/capacity-wire.test.ts compares the two
 * on random and hand-made messages). As protobufjs: int64 read as a Number (two's complement for negatives),
 * a repeated field always an array, a field given twice the last one kept, unknown fields (groups included)
 * skipped, and a message without one of its `required` fields refused ("missing required 'name'"). Unlike
 * protobufjs, a known field with the wrong wire type is refused, not read as garbage, and ids are kept as the
 * bytes they are (ids.ts), where protobufjs reads bytes that are not UTF-8 as U+FFFD.
 */
import { idFromBytes } from './ids.js';
import type * as M from './messages.js';

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;
/** Nested groups skipped at most (an unknown group inside an unknown group ...): bounds the recursion. */
const MAX_GROUP_DEPTH = 32;

export class WireError extends Error {}

/** A cursor over the fields of one message: `field` and `wire` of the current field, its value read on demand. */
class Reader {
  pos: number;
  field = 0;
  wire = 0;

  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  fail(what: string): never {
    throw new WireError(`${what} at offset ${this.pos}`);
  }

  /** A varint as a signed 64-bit integer, converted to the nearest Number (as protobufjs's Long.toNumber). */
  int64(): number {
    const buf = this.buf;
    let b = this.pos < this.end ? buf[this.pos++]! : this.fail('truncated varint');
    if (b < 0x80) return b;
    let lo = b & 0x7f;
    let hi = 0;
    for (let shift = 7; shift < 70; shift += 7) {
      if (this.pos >= this.end) this.fail('truncated varint');
      b = buf[this.pos++]!;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi = (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) {
        lo >>>= 0;
        hi >>>= 0;
        if (hi >>> 31 === 0) return hi * 4294967296 + lo;
        // Negative: the magnitude of the two's complement.
        lo = (~lo + 1) >>> 0;
        hi = ~hi >>> 0;
        if (lo === 0) hi = (hi + 1) >>> 0;
        return -(hi * 4294967296 + lo);
      }
    }
    return this.fail('varint longer than 10 bytes');
  }

  /** A varint known to be a length or a tag (below 2^32). */
  uint32(): number {
    const b = this.pos < this.end ? this.buf[this.pos] : undefined;
    if (b !== undefined && b < 0x80) {
      this.pos++;
      return b;
    }
    const n = this.int64();
    return n < 0 ? n + 18446744073709551616 : n;
  }

  /** Moves to the next field; false at the end of the message. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    const tag = this.uint32();
    this.field = Math.floor(tag / 8);
    this.wire = tag % 8;
    // Field numbers are 1 to 2^29 - 1 (a tag below 2^32); protobufjs would read a longer tag modulo 2^32.
    if (this.field === 0 || tag >= 4294967296) this.fail(`field number ${this.field} out of range`);
    return true;
  }

  /** Checks the current field's wire type. */
  expect(wire: number): void {
    if (this.wire !== wire) this.fail(`field ${this.field} has wire type ${this.wire}, expected ${wire}`);
  }

  /** The current length-delimited field's [start, end), consumed. */
  span(): number {
    this.expect(LEN);
    const len = this.uint32();
    if (len > this.end - this.pos) this.fail('length past the end of the message');
    this.pos += len;
    return this.pos - len;
  }

  /** A client or resource id: bytes, kept byte for byte (ids.ts). */
  id(): string {
    const start = this.span();
    return idFromBytes(this.buf, start, this.pos);
  }

  double(): number {
    this.expect(FIXED64);
    if (this.end - this.pos < 8) this.fail('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  varint(): number {
    this.expect(VARINT);
    return this.int64();
  }

  /** A reader over the current field's content (a sub-message). */
  sub(): Reader {
    const start = this.span();
    return new Reader(this.buf, start, this.pos);
  }

  /** Skips the current (unknown) field. */
  skip(depth = 0): void {
    switch (this.wire) {
      case VARINT:
        this.int64();
        return;
      case FIXED64:
      case FIXED32: {
        const n = this.wire === FIXED64 ? 8 : 4;
        if (this.end - this.pos < n) this.fail('truncated fixed-width field');
        this.pos += n;
        return;
      }
      case LEN:
        this.span();
        return;
      case START_GROUP: {
        if (depth >= MAX_GROUP_DEPTH) this.fail('groups nested too deep');
        const group = this.field;
        for (;;) {
          if (!this.next()) this.fail('unterminated group');
          // (this.wire was narrowed by the switch; next() changed it.)
          if ((this.wire as number) === END_GROUP) {
            if (this.field !== group) this.fail('mismatched end of group');
            return;
          }
          this.skip(depth + 1);
        }
      }
      default:
        this.fail(`invalid wire type ${this.wire}`);
    }
  }
}

function missing(name: string): never {
  throw new WireError(`missing required '${name}'`);
}

function lease(r: Reader): M.Lease {
  let expiry: number | undefined;
  let refresh: number | undefined;
  let capacity: number | undefined;
  while (r.next()) {
    if (r.field === 1) expiry = r.varint();
    else if (r.field === 2) refresh = r.varint();
    else if (r.field === 3) capacity = r.double();
    else r.skip();
  }
  if (expiry === undefined) missing('expiry_time');
  if (refresh === undefined) missing('refresh_interval');
  if (capacity === undefined) missing('capacity');
  return { expiry_time: expiry, refresh_interval: refresh, capacity };
}

function resourceRequest(r: Reader): M.ResourceRequest {
  let id: string | undefined;
  let priority: number | undefined;
  let has: M.Lease | undefined;
  let wants: number | undefined;
  while (r.next()) {
    if (r.field === 1) id = r.id();
    else if (r.field === 2) priority = r.varint();
    else if (r.field === 3) has = lease(r.sub());
    else if (r.field === 4) wants = r.double();
    else r.skip();
  }
  if (id === undefined) missing('resource_id');
  if (priority === undefined) missing('priority');
  if (wants === undefined) missing('wants');
  return has === undefined ? { resource_id: id, priority, wants } : { resource_id: id, priority, has, wants };
}

export function decodeGetCapacityRequest(buf: Buffer): M.GetCapacityRequest {
  const r = new Reader(buf, 0, buf.length);
  let client: string | undefined;
  const resource: M.ResourceRequest[] = [];
  while (r.next()) {
    if (r.field === 1) client = r.id();
    else if (r.field === 2) resource.push(resourceRequest(r.sub()));
    else r.skip();
  }
  if (client === undefined) missing('client_id');
  return { client_id: client, resource };
}

function band(r: Reader): M.PriorityBandAggregate {
  let priority: number | undefined;
  let clients: number | undefined;
  let wants: number | undefined;
  while (r.next()) {
    if (r.field === 1) priority = r.varint();
    else if (r.field === 2) clients = r.varint();
    else if (r.field === 3) wants = r.double();
    else r.skip();
  }
  if (priority === undefined) missing('priority');
  if (clients === undefined) missing('num_clients');
  if (wants === undefined) missing('wants');
  return { priority, num_clients: clients, wants };
}

function serverResourceRequest(r: Reader): M.ServerCapacityResourceRequest {
  let id: string | undefined;
  let has: M.Lease | undefined;
  const wants: M.PriorityBandAggregate[] = [];
  while (r.next()) {
    if (r.field === 1) id = r.id();
    else if (r.field === 2) has = lease(r.sub());
    else if (r.field === 3) wants.push(band(r.sub()));
    else r.skip();
  }
  if (id === undefined) missing('resource_id');
  return has === undefined ? { resource_id: id, wants } : { resource_id: id, has, wants };
}

export function decodeGetServerCapacityRequest(buf: Buffer): M.GetServerCapacityRequest {
  const r = new Reader(buf, 0, buf.length);
  let server: string | undefined;
  const resource: M.ServerCapacityResourceRequest[] = [];
  while (r.next()) {
    if (r.field === 1) server = r.id();
    else if (r.field === 2) resource.push(serverResourceRequest(r.sub()));
    else r.skip();
  }
  if (server === undefined) missing('server_id');
  return { server_id: server, resource };
}

export function decodeReleaseCapacityRequest(buf: Buffer): M.ReleaseCapacityRequest {
  const r = new Reader(buf, 0, buf.length);
  let client: string | undefined;
  const ids: string[] = [];
  while (r.next()) {
    if (r.field === 1) client = r.id();
    else if (r.field === 2) ids.push(r.id());
    else r.skip();
  }
  if (client === undefined) missing('client_id');
  return { client_id: client, resource_id: ids };
}

/** DiscoveryRequest has no fields: anything well-formed is skipped. */
export function decodeDiscoveryRequest(buf: Buffer): Record<string, never> {
  const r = new Reader(buf, 0, buf.length);
  while (r.next()) r.skip();
  return {};
}
