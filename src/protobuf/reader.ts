/**
 * A minimal protobuf reader for the messages we decode by hand (ext-authz-decode.ts): a cursor over the fields
 * of one message, so that a malformed message (truncated, over-long varint, wrong wire type, a group) becomes an
 * InvalidRequestError naming where, and unknown fields are skipped. It allocates nothing per field (no closures,
 * no field objects): a Check is decoded on every request.
 */
import { decodeEscaped } from '../core/bytes.js';
import { InvalidRequestError } from '../core/errors.js';

export const WIRE_VARINT = 0;
export const WIRE_LEN = 2;

export class FieldCursor {
  private pos: number;
  /** The current field: number, wire type, and its varint value or its [start, stop) content. */
  number = 0;
  wireType = 0;
  /** Where the current field's tag starts (for error messages). */
  at = 0;
  varint = 0;
  start = 0;
  stop = 0;

  constructor(
    private readonly buf: Uint8Array,
    start: number,
    private readonly end: number,
    /** The message's name and this cursor's field path, for error messages (`CheckRequest`, `attributes`). */
    private readonly messageName: string,
    readonly path: string,
  ) {
    this.pos = start;
  }

  malformed(what: string, at: number): never {
    throw new InvalidRequestError(`malformed ${this.messageName}: ${what} at ${this.path || 'top level'} (byte ${at})`);
  }

  private readVarint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) this.malformed('truncated varint', this.pos);
      const b = this.buf[this.pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) return result;
      scale *= 128;
    }
    return this.malformed('varint longer than 10 bytes', this.pos);
  }

  /** Moves to the next field; false at the end of the message. */
  next(): boolean {
    if (this.pos >= this.end) return false;
    const tagAt = this.pos;
    this.at = tagAt;
    const tag = this.readVarint();
    this.number = Math.floor(tag / 8);
    this.wireType = tag % 8;
    if (this.number === 0) this.malformed('field number 0', tagAt);
    if (this.wireType === WIRE_VARINT) this.varint = this.readVarint();
    else if (this.wireType === WIRE_LEN) {
      const len = this.readVarint();
      if (len > this.end - this.pos) this.malformed('length past the end of the message', this.pos);
      this.start = this.pos;
      this.pos += len;
      this.stop = this.pos;
    } else if (this.wireType === 1 || this.wireType === 5) {
      const n = this.wireType === 1 ? 8 : 4;
      if (this.end - this.pos < n) this.malformed('truncated fixed-width field', this.pos);
      this.pos += n;
    } else this.malformed(`unsupported wire type ${this.wireType}`, tagAt);
    return true;
  }

  /** Checks that the current (known) field has the wire type it must have. */
  expect(wireType: number, name: string): void {
    if (this.wireType !== wireType) this.malformed(`field ${name} has wire type ${this.wireType}, expected ${wireType}`, this.at);
  }

  /** A cursor over the current field's content, a sub-message at `path`. */
  sub(path: string): FieldCursor {
    this.expect(WIRE_LEN, path);
    return new FieldCursor(this.buf, this.start, this.stop, this.messageName, path);
  }

  /** The current field's content as text (UTF-8, invalid bytes escaped as core/bytes.ts does). */
  text(name: string): string {
    this.expect(WIRE_LEN, name);
    return decodeEscaped(this.buf, this.start, this.stop);
  }

  /** The current field as a map<string,string> entry (key = 1, value = 2). */
  mapEntry(path: string): [string, string] {
    const e = this.sub(path);
    let key = '';
    let value = '';
    while (e.next()) {
      if (e.number === 1) key = e.text(`${path}.key`);
      else if (e.number === 2) value = e.text(`${path}.value`);
    }
    return [key, value];
  }
}
