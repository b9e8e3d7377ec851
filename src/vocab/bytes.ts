/**
 * How the engine, which works on strings, holds values that arrived as bytes which are not valid UTF-8.
 *
 * Envoy sends descriptor keys and values as protobuf `string`s, but it copies header values as they are,
 * and a Latin-1 header is not UTF-8. A lossy decode would turn every invalid byte into U+FFFD, so distinct
 * clients would share one counter. Instead we use the "surrogate escape" (as Python's `surrogateescape`):
 *
 * - every well-formed UTF-8 sequence decodes to its character (overlong forms, encoded surrogates and code
 *   points above U+10FFFF are not well-formed);
 * - every other byte b (always 0x80..0xFF) becomes the lone low surrogate U+DC00 + b (U+DC80..U+DCFF).
 *
 * Well-formed UTF-8 never yields a lone surrogate, so the mapping is injective: distinct byte strings give
 * distinct strings, and `encodeEscaped` gives the bytes back. keys.ts escapes lone surrogates like any other
 * non-ASCII code unit, so counter keys stay distinct; rule values never match an escaped byte (a rule value
 * is valid text). Over /json, a value may carry "\udc80"-style JSON escapes to stand for raw bytes.
 */

/** Decodes bytes as UTF-8, escaping each byte that is not part of a well-formed sequence (see above). */
export function decodeEscaped(bytes: Uint8Array, start = 0, end = bytes.length): string {
  // Fast path: ASCII only (the common case for descriptor keys and values).
  let i = start;
  while (i < end && bytes[i]! < 0x80) i++;
  if (i === end) return latin1(bytes, start, end);
  let out = latin1(bytes, start, i);
  while (i < end) {
    const b0 = bytes[i]!;
    if (b0 < 0x80) {
      out += String.fromCharCode(b0);
      i++;
      continue;
    }
    const cp = sequenceAt(bytes, i, end);
    if (cp === undefined) {
      out += String.fromCharCode(0xdc00 + b0);
      i++;
    } else {
      out += String.fromCodePoint(cp);
      i += cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    }
  }
  return out;
}

/**
 * bytes[start, end) as Latin-1 (for ASCII runs). A Buffer (what grpc-js hands the decoder) is read in place:
 * a new Buffer view per string costs more than the decode of a short key.
 */
function latin1(bytes: Uint8Array, start: number, end: number): string {
  // Up to about 8 characters a JS loop beats the native decode (a call into C++ per string): 70-130 ns
  // against 200-250 ns measured; descriptor keys and short values are that long.
  if (end - start <= 8) {
    let out = '';
    for (let i = start; i < end; i++) out += String.fromCharCode(bytes[i]!);
    return out;
  }
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return buf.toString('latin1', start, end);
}

/** The code point of the well-formed multi-byte sequence starting at i, or undefined. */
function sequenceAt(bytes: Uint8Array, i: number, end: number): number | undefined {
  const b0 = bytes[i]!;
  const cont = (k: number): number | undefined => {
    const b = i + k < end ? bytes[i + k]! : -1;
    return (b & 0xc0) === 0x80 && b !== -1 ? b & 0x3f : undefined;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    const c1 = cont(1);
    return c1 === undefined ? undefined : ((b0 & 0x1f) << 6) | c1;
  }
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const c1 = cont(1);
    const c2 = cont(2);
    if (c1 === undefined || c2 === undefined) return undefined;
    const cp = ((b0 & 0x0f) << 12) | (c1 << 6) | c2;
    return cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) ? undefined : cp; // overlong, or an encoded surrogate
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const c1 = cont(1);
    const c2 = cont(2);
    const c3 = cont(3);
    if (c1 === undefined || c2 === undefined || c3 === undefined) return undefined;
    const cp = ((b0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3;
    return cp < 0x10000 || cp > 0x10ffff ? undefined : cp;
  }
  return undefined; // a continuation byte, 0xc0/0xc1, or 0xf5..0xff
}

/** The bytes a string stands for: the inverse of decodeEscaped (U+DC80..U+DCFF alone → one raw byte). */
export function encodeEscaped(text: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const u = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (u >= 0xd800 && u <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out.push(...Buffer.from(text.slice(i, i + 2), 'utf8'));
      i++;
    } else if (u >= 0xdc80 && u <= 0xdcff) out.push(u - 0xdc00);
    else out.push(...Buffer.from(text[i]!, 'utf8'));
  }
  return Uint8Array.from(out);
}

/** Byte length of what a string stands for (escaped bytes count 1), without allocating. */
export function escapedByteLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const u = text.charCodeAt(i);
    if (u < 0x80) n += 1;
    else if (u < 0x800) n += 2;
    else if (u >= 0xd800 && u <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else if (u >= 0xdc80 && u <= 0xdcff) n += 1;
    else n += 3;
  }
  return n;
}

/**
 * The text with lone surrogates (escaped bytes) shown as U+FFFD: for protobuf `string` output and logs.
 * String.prototype.toWellFormed (ES2024, in Node 20) does exactly that, natively: several times faster than
 * a regular expression on the per-response path. The project's lib is ES2023, hence the cast.
 */
export function wellFormed(text: string): string {
  return (text as string & { toWellFormed(): string }).toWellFormed();
}
