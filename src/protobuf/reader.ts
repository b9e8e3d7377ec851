/**
 * The protobuf reader every decoder of this service uses: a cursor over the fields of one message. Every
 * length is checked against the message's end, so a malformed message (truncated, an over-long varint, a
 * length past the end, field number 0 or past 2^29 - 1, an unsupported wire type, a known field with the
 * wrong wire type) becomes a ProtobufError naming where, which each caller maps to its own error and status.
 *
 * Allocation is kept visible, for decoders on the per-request path: `next()` leaves the current field in
 * the reader's own properties (number, wire type, varint value or content span), and the path named in an
 * error is built from the parents only when an error needs it. A message costs one reader per nesting level
 * whatever its number of sub-messages: `sub()` hands out the same child reader each time, so a sub-message is
 * read to its end (or dropped) before its parent opens the next one.
 */
import { decodeEscaped } from '../vocab/bytes.js';

export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const START_GROUP = 3;
export const END_GROUP = 4;
export const FIXED32 = 5;

/** Nested groups skipped at most (an unknown group inside an unknown group ...): bounds the recursion. */
const MAX_GROUP_DEPTH = 32;
/** Tags are below 2^32: field numbers are 1 to 2^29 - 1. */
const TAG_LIMIT = 4294967296;

/** A malformed message: which message, what is wrong, at which field path and byte. */
export class ProtobufError extends Error {
  constructor(
    readonly messageName: string,
    readonly reason: string,
    /** The field path of the sub-message (`descriptors[0].entries[1]`), '' at the top level. */
    readonly path: string,
    readonly byte: number,
  ) {
    super(`malformed ${messageName}: ${reason} at ${path || 'top level'} (byte ${byte})`);
    this.name = 'ProtobufError';
  }

  /** The message without the message's name: `reason at path (byte n)`. */
  get detail(): string {
    return `${this.reason} at ${this.path || 'top level'} (byte ${this.byte})`;
  }
}

const scratch = new Float64Array(1);
const scratchBytes = new Uint8Array(scratch.buffer);
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

export class ProtoReader {
  /** Where the next field starts. */
  pos: number;
  /** The current field: its number and wire type. */
  number = 0;
  wireType = 0;
  /** Where the current field's tag starts. */
  at = 0;
  /** A varint field's value as a Number (exact up to 2^53; larger values only compare as large). */
  varint = 0;
  /** Where a length-delimited or fixed-width field's content starts (it ends at `stop`). */
  start = 0;
  /** The reader sub() hands out, made on its first call. */
  private child: ProtoReader | undefined = undefined;

  /**
   * A reader over `buf[start, end)`, the message `messageName` (named in errors). With `skipGroups`, groups
   * (a deprecated wire form) are skipped as unknown fields, their nesting bounded; without, they are malformed.
   */
  constructor(
    /** The bytes read (reset() points the reader at others). */
    public buf: Uint8Array,
    readonly messageName: string,
    private readonly skipGroups = false,
    start = 0,
    /** Where this message ends in `buf`. */
    public end = buf.length,
    private readonly parent?: ProtoReader,
    /** This sub-message's field name in its parent, and its index in a repeated field (or -1). */
    private name = '',
    private index = -1,
  ) {
    this.pos = start;
  }

  /**
   * Points this (top-level) reader at another message, `buf[start, end)`: a decoder called for every request
   * keeps one reader (and its children) rather than making them per call.
   */
  reset(buf: Uint8Array, start = 0, end = buf.length): this {
    this.buf = buf;
    this.pos = start;
    this.end = end;
    for (let c = this.child; c !== undefined; c = c.child) c.buf = buf; // none keeps the last message's bytes
    return this;
  }

  /** Where the current length-delimited or fixed-width field's content ends: where the next field starts. */
  get stop(): number {
    return this.pos;
  }

  /** This message's field path from the top (`descriptors[0].entries[1]`); '' at the top level. */
  get path(): string {
    if (this.parent === undefined) return '';
    const above = this.parent.path;
    const own = this.index >= 0 ? `${this.name}[${this.index}]` : this.name;
    return above === '' ? own : `${above}.${own}`;
  }

  /** Throws the ProtobufError of this message; `byte` defaults to where reading stopped. */
  fail(reason: string, byte = this.pos): never {
    throw new ProtobufError(this.messageName, reason, this.path, byte);
  }

  private readVarint(): number {
    const at = this.pos;
    if (at < this.end) {
      const b = this.buf[at]!;
      if (b < 0x80) {
        this.pos = at + 1;
        return b;
      }
    }
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.fail('truncated varint');
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    return this.fail('varint longer than 10 bytes');
  }

  /** Reads a tag; returns the wire type, leaves the field number in `number`. */
  private readTag(): number {
    const at = this.pos;
    const first = this.buf[at]!; // (at < end: checked by the callers)
    if (first < 0x80) {
      if (first < 8) this.fail('field number 0', at);
      this.pos = at + 1;
      this.number = first >> 3;
      return first & 7;
    }
    const tag = this.readVarint();
    const number = Math.floor(tag / 8);
    if (number === 0) this.fail('field number 0', at);
    if (tag >= TAG_LIMIT) this.fail(`field number ${number} out of range`, at);
    this.number = number;
    return tag % 8;
  }

  /** Reads (or skips) the value of a field of wire type `type` whose tag started at `at`. */
  private readValue(type: number, at: number, depth: number): void {
    if (type === LEN) {
      const len = this.readVarint();
      if (len > this.end - this.pos) this.fail('length past the end of the message');
      this.start = this.pos;
      this.pos += len;
    } else if (type === VARINT) this.varint = this.readVarint();
    else if (type === FIXED64 || type === FIXED32) {
      const n = type === FIXED64 ? 8 : 4;
      if (this.end - this.pos < n) this.fail('truncated fixed-width field');
      this.start = this.pos;
      this.pos += n;
    } else if (type === START_GROUP && this.skipGroups) {
      const number = this.number;
      this.skipGroup(number, at, depth);
      this.number = number; // (the group's own fields were read)
    } else this.fail(`unsupported wire type ${type}`, at);
  }

  private skipGroup(group: number, at: number, depth: number): void {
    if (depth >= MAX_GROUP_DEPTH) this.fail('groups nested too deep', at);
    for (;;) {
      if (this.pos >= this.end) this.fail('unterminated group', at);
      const tagAt = this.pos;
      const type = this.readTag();
      if (type === END_GROUP) {
        if (this.number !== group) this.fail('mismatched end of group', tagAt);
        return;
      }
      this.readValue(type, tagAt, depth + 1);
    }
  }

  /** Moves to the next field, its value read (a group skipped whole); false at the end of the message. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    const at = this.pos;
    this.at = at;
    const type = this.readTag();
    this.wireType = type;
    if (type === LEN) {
      const len = this.readVarint();
      if (len > this.end - this.pos) this.fail('length past the end of the message');
      this.start = this.pos;
      this.pos += len;
    } else this.readValue(type, at, 0);
    return true;
  }

  /** Checks that the current field has the wire type it must have; `name` names it (else its number). */
  expect(wireType: number, name?: string): void {
    if (this.wireType !== wireType) this.fail(`field ${name ?? this.number} has wire type ${this.wireType}, expected ${wireType}`, this.at);
  }

  /** The current varint field (uint32, uint64, bool, enum) as a Number. */
  uint(name?: string): number {
    this.expect(VARINT, name);
    return this.varint;
  }

  /** The current varint field as a signed 64-bit integer (two's complement), converted to the nearest Number. */
  int64(name?: string): number {
    this.expect(VARINT, name);
    if (this.varint < 0x80) return this.varint;
    const buf = this.buf;
    let lo = 0;
    let hi = 0;
    let p = this.at;
    while (buf[p++]! >= 0x80); // past the tag
    for (let shift = 0; ; shift += 7) {
      const b = buf[p++]!;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi = (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) break;
    }
    lo >>>= 0;
    hi >>>= 0;
    if (hi >>> 31 === 0) return hi * 4294967296 + lo;
    // Negative: the magnitude of the two's complement.
    lo = (~lo + 1) >>> 0;
    hi = ~hi >>> 0;
    if (lo === 0) hi = (hi + 1) >>> 0;
    return -(hi * 4294967296 + lo);
  }

  /** The current fixed64 field as a double. */
  double(name?: string): number {
    this.expect(FIXED64, name);
    const buf = this.buf;
    const s = this.start;
    for (let i = 0; i < 8; i++) scratchBytes[LITTLE_ENDIAN ? i : 7 - i] = buf[s + i]!;
    return scratch[0]!;
  }

  /** The current length-delimited field as text, bytes that are not UTF-8 escaped injectively (vocab/bytes.ts). */
  text(name?: string): string {
    this.expect(LEN, name);
    return decodeEscaped(this.buf, this.start, this.stop);
  }

  /** The current length-delimited field as UTF-8 text, invalid bytes read as U+FFFD. */
  utf8(name?: string): string {
    this.expect(LEN, name);
    return Buffer.from(this.buf.buffer, this.buf.byteOffset + this.start, this.stop - this.start).toString('utf8');
  }

  /** The current length-delimited field's content (a view, not a copy). */
  bytes(name?: string): Uint8Array {
    this.expect(LEN, name);
    return this.buf.subarray(this.start, this.stop);
  }

  /**
   * A reader over the current field's content, the sub-message `name` (`index` in a repeated field): the same
   * reader object at every call, valid until the next call.
   */
  sub(name: string, index = -1): ProtoReader {
    this.expect(LEN, name);
    const c = this.child;
    if (c === undefined) return (this.child = new ProtoReader(this.buf, this.messageName, this.skipGroups, this.start, this.stop, this, name, index));
    c.pos = this.start; // (c.buf is this.buf: reset() points both at new bytes)
    c.end = this.stop;
    c.name = name;
    c.index = index;
    return c;
  }

  /** The current field as a map<string, string> entry (key = 1, value = 2), both as text(). */
  mapEntry(name: string): [string, string] {
    const e = this.sub(name);
    let key = '';
    let value = '';
    while (e.next()) {
      if (e.number === 1) key = e.text('key');
      else if (e.number === 2) value = e.text('value');
    }
    return [key, value];
  }
}
