/**
 * The protobuf writer every encoder of this service uses: sizes are computed first (varintSize, tagSize,
 * lenFieldSize), then the bytes are written once into one buffer of that size, so a message costs one
 * allocation and no intermediate objects. Any field number (1 to 2^29 - 1); the wire types varint,
 * length-delimited and fixed64 (double).
 */

/** Bytes a varint of `n` (0 ≤ n < 2^53) takes. */
export function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x200000) return 3;
  if (n < 0x10000000) return 4;
  let size = 5;
  for (let v = Math.floor(n / 0x800000000); v > 0; v = Math.floor(v / 128)) size++;
  return size;
}

const TWO_63 = 9223372036854775808;

/** Bytes a signed int64 varint of the integer `n` takes: 10 for a negative one (two's complement). */
export function int64Size(n: number): number {
  return n < 0 ? 10 : n >= TWO_63 ? 9 : varintSize(n);
}

/** Bytes the tag of field `field` takes (one byte for fields 1 to 15). */
export function tagSize(field: number): number {
  return varintSize(field * 8);
}

/** Bytes a length-delimited field with `len` bytes of content takes, tag included (field 1 to 15 unless given). */
export function lenFieldSize(len: number, field?: number): number {
  return (field === undefined ? 1 : tagSize(field)) + varintSize(len) + len;
}

/** UTF-8 length of a string (fast path for ASCII). */
export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

export class ProtoWriter {
  readonly buf: Buffer;
  pos: number;

  /** `prefix` bytes are left free at the start (the gRPC frame header). */
  constructor(size: number, prefix = 0) {
    this.buf = Buffer.allocUnsafe(prefix + size);
    this.pos = prefix;
  }

  varint(n: number): void {
    const buf = this.buf;
    while (n >= 0x80) {
      buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[this.pos++] = n;
  }

  /** A signed int64 varint of the integer `n`, clamped to the int64 range (negatives as 10-byte two's complement). */
  int64(n: number): void {
    if (n >= 0 && n < TWO_63) {
      this.varint(n);
      return;
    }
    // Rare: the exact two's complement through BigInt.
    let u = BigInt.asUintN(64, n >= TWO_63 ? 2n ** 63n - 1n : n < -TWO_63 ? -(2n ** 63n) : BigInt(n));
    while (u >= 0x80n) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  tag(field: number, wireType: number): void {
    const tag = field * 8 + wireType;
    if (tag < 0x80) this.buf[this.pos++] = tag;
    else this.varint(tag);
  }

  string(field: number, s: string, byteLength: number): void {
    this.tag(field, 2);
    this.varint(byteLength);
    this.pos += this.buf.write(s, this.pos, byteLength, 'utf8');
  }

  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  double(field: number, v: number): void {
    this.tag(field, 1);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  /** Starts a length-delimited field whose content is `len` bytes (written next by the caller). */
  header(field: number, len: number): void {
    this.tag(field, 2);
    this.varint(len);
  }
}
