/**
 * The little protobuf this room needs, by hand: a bounded reader (every length checked, a malformed message is
 * an Error naming the byte) and a writer for the few fields of a DiscoveryRequest. The xDS client decodes a
 * DiscoveryResponse and its RateLimitConfig resources with it; nothing here allocates per byte.
 */

export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const FIXED32 = 5;

export class ProtoReader {
  private pos: number;
  number = 0;
  wireType = 0;
  varint = 0;
  start = 0;
  stop = 0;

  constructor(
    private readonly buf: Uint8Array,
    private readonly what: string,
    start = 0,
    private readonly end = buf.length,
  ) {
    this.pos = start;
  }

  private fail(reason: string): never {
    throw new Error(`malformed ${this.what}: ${reason} at byte ${this.pos}`);
  }

  private readVarint(): number {
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

  /** Moves to the next field; false at the end. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    const tag = this.readVarint();
    this.number = Math.floor(tag / 8);
    this.wireType = tag % 8;
    if (this.number === 0) this.fail('field number 0');
    if (this.wireType === VARINT) this.varint = this.readVarint();
    else if (this.wireType === LEN) {
      const len = this.readVarint();
      if (len > this.end - this.pos) this.fail('length past the end');
      this.start = this.pos;
      this.pos += len;
      this.stop = this.pos;
    } else if (this.wireType === FIXED64 || this.wireType === FIXED32) {
      const n = this.wireType === FIXED64 ? 8 : 4;
      if (this.end - this.pos < n) this.fail('truncated fixed-width field');
      this.start = this.pos;
      this.pos += n;
      this.stop = this.pos;
    } else this.fail(`unsupported wire type ${this.wireType}`);
    return true;
  }

  private expect(wireType: number, field: string): void {
    if (this.wireType !== wireType) throw new Error(`malformed ${this.what}: ${field} has wire type ${this.wireType}, expected ${wireType}`);
  }

  text(field: string): string {
    this.expect(LEN, field);
    return Buffer.from(this.buf.buffer, this.buf.byteOffset + this.start, this.stop - this.start).toString('utf8');
  }

  bytes(field: string): Uint8Array {
    this.expect(LEN, field);
    return this.buf.subarray(this.start, this.stop);
  }

  sub(what: string): ProtoReader {
    this.expect(LEN, what);
    return new ProtoReader(this.buf, what, this.start, this.stop);
  }

  /** A varint field (uint32, bool, enum). */
  int(field: string): number {
    this.expect(VARINT, field);
    return this.varint;
  }

  double(field: string): number {
    this.expect(FIXED64, field);
    return Buffer.from(this.buf.buffer, this.buf.byteOffset + this.start, 8).readDoubleLE(0);
  }
}

/** Builds a message field by field; `finish()` gives the bytes. */
export class ProtoWriter {
  private readonly parts: Buffer[] = [];

  private varint(n: number): void {
    const bytes: number[] = [];
    let v = n;
    while (v >= 0x80) {
      bytes.push((v % 128) | 0x80);
      v = Math.floor(v / 128);
    }
    bytes.push(v);
    this.parts.push(Buffer.from(bytes));
  }

  string(field: number, value: string): this {
    if (value === '') return this;
    return this.bytes(field, Buffer.from(value, 'utf8'));
  }

  bytes(field: number, value: Uint8Array): this {
    this.varint(field * 8 + LEN);
    this.varint(value.length);
    this.parts.push(Buffer.from(value));
    return this;
  }

  int(field: number, value: number): this {
    if (value === 0) return this;
    this.varint(field * 8 + VARINT);
    this.varint(value);
    return this;
  }

  finish(): Buffer {
    return Buffer.concat(this.parts);
  }
}
