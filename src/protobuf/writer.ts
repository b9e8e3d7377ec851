/**
 * A minimal protobuf writer for the few messages this service answers with (encode-response.ts, the lean
 * health service): sizes are computed first, then the bytes are written once into one buffer, so an answer
 * costs one allocation and no intermediate objects. Only the wire types those messages use: varint,
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

/** Bytes a length-delimited field with `len` bytes of content takes, tag included (field numbers < 16). */
export function lenFieldSize(len: number): number {
  return 1 + varintSize(len) + len;
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

  /** A tag for field numbers below 16. */
  tag(field: number, wireType: number): void {
    this.buf[this.pos++] = (field << 3) | wireType;
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
