/**
 * A minimal protobuf reader for the messages we decode by hand (ext-authz-decode.ts): it walks the fields
 * of one message and hands each to a visitor, so that a malformed message (truncated, over-long varint,
 * wrong wire type, a group) becomes an InvalidRequestError naming where, and unknown fields are skipped.
 */
import { decodeEscaped } from '../core/bytes.js';
import { InvalidRequestError } from '../core/errors.js';

export const WIRE_VARINT = 0;
export const WIRE_LEN = 2;

/** One field of a message: its number, wire type, and a varint value or a [start, end) byte span. */
export interface WireField {
  readonly number: number;
  readonly wireType: number;
  /** For varints. */
  readonly varint: number;
  /** For length-delimited fields. */
  readonly start: number;
  readonly end: number;
}

export class MessageWalker {
  constructor(
    readonly buf: Uint8Array,
    /** The message's name, for error messages (`CheckRequest`). */
    readonly messageName: string,
  ) {}

  malformed(what: string, path: string, at: number): never {
    throw new InvalidRequestError(`malformed ${this.messageName}: ${what} at ${path || 'top level'} (byte ${at})`);
  }

  /** Visits the fields of the message in [start, end); `path` names it in errors. */
  walk(start: number, end: number, path: string, visit: (f: WireField) => void): void {
    let pos = start;
    const varint = (): number => {
      let result = 0;
      let scale = 1;
      for (let i = 0; i < 10; i++) {
        if (pos >= end) this.malformed('truncated varint', path, pos);
        const b = this.buf[pos++]!;
        result += (b & 0x7f) * scale;
        if (b < 0x80) return result;
        scale *= 128;
      }
      return this.malformed('varint longer than 10 bytes', path, pos);
    };
    while (pos < end) {
      const tagAt = pos;
      const tag = varint();
      const number = Math.floor(tag / 8);
      const wireType = tag % 8;
      if (number === 0) this.malformed('field number 0', path, tagAt);
      if (wireType === WIRE_VARINT) {
        visit({ number, wireType, varint: varint(), start: 0, end: 0 });
      } else if (wireType === WIRE_LEN) {
        const len = varint();
        if (len > end - pos) this.malformed('length past the end of the message', path, pos);
        visit({ number, wireType, varint: 0, start: pos, end: pos + len });
        pos += len;
      } else if (wireType === 1 || wireType === 5) {
        const n = wireType === 1 ? 8 : 4;
        if (end - pos < n) this.malformed('truncated fixed-width field', path, pos);
        visit({ number, wireType, varint: 0, start: pos, end: pos });
        pos += n;
      } else this.malformed(`unsupported wire type ${wireType}`, path, tagAt);
    }
  }

  /** Checks that a known field has the wire type it must have. */
  expect(f: WireField, wireType: number, path: string): void {
    if (f.wireType !== wireType) this.malformed(`field ${path} has wire type ${f.wireType}, expected ${wireType}`, path, f.start);
  }

  /** A length-delimited field's content as text (UTF-8, invalid bytes escaped as core/bytes.ts does). */
  text(f: WireField, path: string): string {
    this.expect(f, WIRE_LEN, path);
    return decodeEscaped(this.buf, f.start, f.end);
  }

  /** A map<string,string> entry (key = 1, value = 2). */
  mapEntry(f: WireField, path: string): [string, string] {
    this.expect(f, WIRE_LEN, path);
    let key = '';
    let value = '';
    this.walk(f.start, f.end, path, (e) => {
      if (e.number === 1) key = this.text(e, `${path}.key`);
      else if (e.number === 2) value = this.text(e, `${path}.value`);
    });
    return [key, value];
  }
}
