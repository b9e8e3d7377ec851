/**
 * The protobuf reader (src/protobuf/reader.ts) on messages written by protobufjs, an independent encoder:
 * every wire type and field number read back, a malformed message refused with a ProtobufError naming the
 * field path and byte, groups skipped only when asked, and sub-messages read one after another through the
 * one child reader sub() hands out.
 */
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { FIXED32, LEN, ProtobufError, ProtoReader, VARINT } from '../../../src/protobuf/reader.js';

const writer = () => protobuf.Writer.create();
const bytes = (w: protobuf.Writer) => Buffer.from(w.finish());

/** The ProtobufError `read` throws. */
function failure(read: () => unknown): ProtobufError {
  try {
    read();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtobufError);
    return err as ProtobufError;
  }
  throw new Error('no error');
}

describe('ProtoReader', () => {
  it('reads every wire type at field numbers 1, 16, 2048 and 2^29 - 1', () => {
    for (const field of [1, 16, 2048, 2 ** 29 - 1]) {
      const w = writer();
      w.uint32(field * 8 + VARINT).uint64(2 ** 40);
      w.uint32(field * 8 + 1).double(-2.5);
      w.uint32(field * 8 + LEN).string('é');
      w.uint32(field * 8 + FIXED32).fixed32(7);
      w.uint32(field * 8 + VARINT).int64(-3);
      const r = new ProtoReader(bytes(w), 'M');
      const seen: unknown[] = [];
      while (r.next()) {
        expect(r.number).toBe(field);
        seen.push(
          r.wireType === VARINT ? (seen.length === 0 ? r.uint() : r.int64()) : r.wireType === 1 ? r.double() : r.wireType === LEN ? r.text() : r.stop - r.start,
        );
      }
      expect(seen).toEqual([2 ** 40, -2.5, 'é', 4, -3]);
    }
  });

  it('names the message, the reason, the field path (indices included) and the byte of a malformed message', () => {
    // {a: [{}, {b: <field 1 as a varint>}]}
    const inner = bytes(writer().uint32(8).uint32(1));
    const outer = bytes(writer().uint32(18).bytes(new Uint8Array(0)).uint32(18).bytes(inner));
    const msg = bytes(writer().uint32(10).bytes(outer));
    const err = failure(() => {
      const top = new ProtoReader(msg, 'Top');
      while (top.next()) {
        const a = top.sub('a');
        let i = 0;
        while (a.next()) {
          const b = a.sub('items', i++);
          while (b.next()) b.text('name');
        }
      }
    });
    expect(err.message).toBe('malformed Top: field name has wire type 0, expected 2 at a.items[1] (byte 6)');
    expect([err.messageName, err.reason, err.path, err.byte]).toEqual(['Top', 'field name has wire type 0, expected 2', 'a.items[1]', 6]);
    expect(err.detail).toBe('field name has wire type 0, expected 2 at a.items[1] (byte 6)');
  });

  it.each([
    ['truncated varint', [0x08, 0x80]],
    ['varint longer than 10 bytes', [0x08, ...Array<number>(10).fill(0x80), 0x01]],
    ['length past the end of the message', [0x0a, 0x05, 0x61]],
    ['field number 0', [0x00, 0x01]],
    ['field number 536870912 out of range', [0x80, 0x80, 0x80, 0x80, 0x10, 0x01]],
    ['truncated fixed-width field', [0x0d, 0x01, 0x02]],
    ['unsupported wire type 3', [0x0b, 0x0c]],
    ['unsupported wire type 6', [0x0e]],
  ])('refuses %s', (reason, b) => {
    const err = failure(() => {
      const r = new ProtoReader(Buffer.from(b), 'M');
      while (r.next());
    });
    expect(err.reason).toBe(reason);
  });

  it('skips groups, nested ones too, only when asked, and bounds their nesting', () => {
    // field 1 group { field 2 group { field 3 varint } }, then field 4 varint 9
    const msg = Buffer.from([0x0b, 0x13, 0x18, 0x01, 0x14, 0x0c, 0x20, 0x09]);
    const r = new ProtoReader(msg, 'M', true);
    const fields: number[] = [];
    while (r.next()) fields.push(r.number);
    expect(fields).toEqual([1, 4]);
    expect(failure(() => new ProtoReader(msg, 'M').next()).reason).toBe('unsupported wire type 3');
    expect(failure(() => new ProtoReader(Buffer.from([0x0b, 0x14]), 'M', true).next()).reason).toBe('mismatched end of group');
    expect(failure(() => new ProtoReader(Buffer.from([0x0b, 0x08, 0x01]), 'M', true).next()).reason).toBe('unterminated group');
    const deep = Buffer.from([...Array<number>(40).fill(0x0b), ...Array<number>(40).fill(0x0c)]);
    expect(failure(() => new ProtoReader(deep, 'M', true).next()).reason).toBe('groups nested too deep');
  });

  it('reads sub-messages one after another through one child reader, and reset() points it all at new bytes', () => {
    const msg = bytes(writer().uint32(10).fork().uint32(10).string('x').ldelim().uint32(10).fork().uint32(10).string('y').ldelim());
    const r = new ProtoReader(msg, 'M');
    const names: string[] = [];
    const children = new Set<ProtoReader>();
    while (r.next()) {
      const c = r.sub('c');
      children.add(c);
      while (c.next()) names.push(c.text());
    }
    expect(names).toEqual(['x', 'y']);
    expect(children.size).toBe(1);
    const other = bytes(writer().uint32(10).fork().uint32(10).string('z').ldelim());
    r.reset(other);
    expect(r.next()).toBe(true);
    const c = r.sub('c');
    expect(c.next()).toBe(true);
    expect(c.text()).toBe('z');
    r.reset(new Uint8Array(0));
    expect(c.buf.length).toBe(0);
  });
});
