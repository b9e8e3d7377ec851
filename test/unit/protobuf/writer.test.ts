/**
 * The pre-sized protobuf writer (src/protobuf/writer.ts): what it writes is read back by protobufjs, an
 * independent decoder, at every field number (a tag takes 1 byte up to field 15, 2 up to 2047, 3 from 2048, up
 * to 5 at 2^29 - 1), and the sizes computed first are the bytes written.
 */
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { int64Size, lenFieldSize, ProtoWriter, tagSize, utf8Length, varintSize } from '../../../src/protobuf/writer.js';

const FIELDS = [1, 15, 16, 100, 2047, 2048, 300_000, 2 ** 29 - 1];

/** Every field of a message as [number, wire type, value] read by protobufjs (length-delimited as bytes). */
function fields(bytes: Uint8Array): [number, number, unknown][] {
  const r = protobuf.Reader.create(bytes);
  const out: [number, number, unknown][] = [];
  while (r.pos < r.len) {
    const tag = r.uint32();
    const type = tag & 7;
    const number = tag >>> 3;
    out.push([number, type, type === 0 ? r.uint32() : type === 1 ? r.double() : Buffer.from(r.bytes())]);
  }
  return out;
}

describe('ProtoWriter', () => {
  it('writes a tag of 1, 2, 3 or 5 bytes as the field number needs', () => {
    expect(FIELDS.map(tagSize)).toEqual([1, 1, 2, 2, 2, 3, 4, 5]);
  });

  it.each(FIELDS)('writes varint, string and double fields numbered %i that protobufjs reads back', (field) => {
    const text = 'héllo';
    const n = utf8Length(text);
    const size = tagSize(field) + varintSize(300) + lenFieldSize(n, field) + tagSize(field) + 8;
    const w = new ProtoWriter(size);
    w.tag(field, 0);
    w.varint(300);
    w.string(field, text, n);
    w.double(field, 2.5);
    expect(w.pos).toBe(size);
    expect(fields(w.buf)).toEqual([
      [field, 0, 300],
      [field, 2, Buffer.from(text)],
      [field, 1, 2.5],
    ]);
  });

  it('sizes a nested message at field 2048 as written', () => {
    const inner = lenFieldSize(1, 16);
    const w = new ProtoWriter(lenFieldSize(inner, 2048));
    w.header(2048, inner);
    w.bytes(16, Uint8Array.of(0x61));
    expect(w.pos).toBe(w.buf.length);
    const [[number, type, content]] = fields(w.buf) as [[number, number, Buffer]];
    expect([number, type]).toEqual([2048, 2]);
    expect(fields(content)).toEqual([[16, 2, Buffer.from('a')]]);
  });

  it('writes signed int64 varints as protobufjs reads them: negatives in 10 bytes, the int64 range clamped', () => {
    const values = [0, 1, 2 ** 53, -1, -(2 ** 40), 2 ** 64, -(2 ** 64)];
    const w = new ProtoWriter(values.reduce((n, v) => n + int64Size(v), 0));
    for (const v of values) w.int64(v);
    expect(w.pos).toBe(w.buf.length);
    const r = protobuf.Reader.create(w.buf);
    expect(values.map(() => String(r.int64() as unknown as { toString(): string }))).toEqual([
      '0',
      '1',
      '9007199254740992',
      '-1',
      '-1099511627776',
      '9223372036854775807',
      '-9223372036854775808',
    ]);
  });
});
