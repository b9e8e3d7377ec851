/**
 * Client and resource ids are bytes (proto2 `string` fields that Doorman keys and echoes byte for byte, valid
 * UTF-8 or not). In memory an id is a JS string that stands for exactly one byte sequence:
 * - valid UTF-8 is its decoded text (the common case: keys, /capacity, metrics and globs read as usual);
 * - anything else is RAW_MARK followed by one character per byte (latin1). Decoded valid UTF-8 never holds a
 *   lone surrogate, so the two forms cannot meet: distinct byte sequences are distinct ids.
 * An id longer than MAX_KEPT_ID_BYTES is keyed by its SHA-256 (idKey): leases, Redis and /capacity then hold 32
 * bytes, not the whole id; answers echo the resource id as it was sent.
 * In Redis (keys, hash fields, the change log) an id is written as valid UTF-8 text (redisId): the text itself,
 * escaped when it begins with NUL, or NUL, '!' and the bytes in hex for a raw id; fromRedisId reverses it.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';

/** A lone high surrogate: never in text decoded from valid UTF-8. */
const RAW_MARK = '\uD800';
const RAW_CODE = 0xd800;
/** Marks the key of a long id: its SHA-256 (another lone surrogate). */
const HASH_MARK = '\uD801';
const HASH_CODE = 0xd801;
/** Ids up to this many bytes are kept as they are; longer ones are keyed by their SHA-256 (idKey). */
export const MAX_KEPT_ID_BYTES = 1024;

/** The id of bytes [start, end) of `buf`. */
export function idFromBytes(buf: Buffer, start: number, end: number): string {
  // Short ASCII: built in JS (cheaper than a native call).
  if (end - start <= 32) {
    let s = '';
    for (let i = start; i < end; i++) {
      const b = buf[i]!;
      if (b >= 0x80) return nonAscii(buf, start, end);
      s += String.fromCharCode(b);
    }
    return s;
  }
  return nonAscii(buf, start, end);
}

function nonAscii(buf: Buffer, start: number, end: number): string {
  const bytes = buf.subarray(start, end);
  return isUtf8(bytes) ? bytes.toString('utf8') : RAW_MARK + bytes.toString('latin1');
}

/** Whether an id stands for bytes that are not valid UTF-8. */
export function isRawId(id: string): boolean {
  return id.charCodeAt(0) === RAW_CODE;
}

/** The bytes an id stands for. */
export function idBytes(id: string): Buffer {
  return isRawId(id) ? Buffer.from(id.slice(1), 'latin1') : Buffer.from(id, 'utf8');
}

/** How many bytes an id stands for. */
export function idByteLength(id: string): number {
  if (isRawId(id)) return id.length - 1;
  if (id.length <= 64) {
    let ascii = true;
    for (let i = 0; i < id.length && ascii; i++) ascii = id.charCodeAt(i) < 0x80;
    if (ascii) return id.length;
  }
  return Buffer.byteLength(id, 'utf8');
}

/** Writes the id's bytes at `at` (room for idByteLength bytes); returns how many. */
export function writeId(buf: Buffer, at: number, id: string): number {
  if (isRawId(id)) return buf.write(id.slice(1), at, 'latin1');
  if (id.length <= 64) {
    // Short ASCII copied in JS (cheaper than a native call); anything else through Buffer.write.
    let i = 0;
    for (; i < id.length; i++) {
      const c = id.charCodeAt(i);
      if (c >= 0x80) break;
      buf[at + i] = c;
    }
    if (i === id.length) return i;
  }
  return buf.write(id, at, 'utf8');
}

/** The key leases are kept under: the id itself, or for an id over MAX_KEPT_ID_BYTES its SHA-256. */
export function idKey(id: string): string {
  if (id.length <= MAX_KEPT_ID_BYTES / 3 || idByteLength(id) <= MAX_KEPT_ID_BYTES) return id;
  return HASH_MARK + createHash('sha256').update(idBytes(id)).digest('base64url');
}

/** The id (or key) as text for people and globs: bytes that are not UTF-8 shown as U+FFFD, a long id's key as `sha256:…`. */
export function idText(id: string): string {
  const c = id.charCodeAt(0);
  if (c === HASH_CODE) return `sha256:${id.slice(1)}`;
  return c === RAW_CODE ? Buffer.from(id.slice(1), 'latin1').toString('utf8') : id;
}

/** A key as Redis stores it: valid UTF-8 text, one per key (see the header). */
export function redisId(id: string): string {
  const c = id.charCodeAt(0);
  if (c === RAW_CODE) return `\u0000!${Buffer.from(id.slice(1), 'latin1').toString('hex')}`;
  if (c === HASH_CODE) return `\u0000#${id.slice(1)}`;
  return c === 0 ? `\u0000${id}` : id;
}

export function fromRedisId(text: string): string {
  if (text.charCodeAt(0) !== 0) return text;
  const c = text.charCodeAt(1);
  if (c === 0x21) return RAW_MARK + Buffer.from(text.slice(2), 'hex').toString('latin1');
  if (c === 0x23) return HASH_MARK + text.slice(2);
  return text.slice(1);
}
