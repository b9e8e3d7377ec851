/**
 * The surrogate escape for non-UTF-8 bytes (vocab/bytes.ts): valid UTF-8 decodes as usual, every other
 * byte keeps its identity, and distinct byte strings never meet (as strings or as counter keys).
 */
import { describe, expect, it } from 'vitest';
import { decodeEscaped, encodeEscaped, escapedByteLength, wellFormed } from '../../../src/vocab/bytes.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { prng } from '../../support/prng.js';

const bytes = (...b: number[]) => Uint8Array.from(b);

describe('decodeEscaped', () => {
  it('decodes well-formed UTF-8 exactly as Node does', () => {
    for (const text of ['', 'abc', 'é', '✓', '😀', 'a\u0000b', 'x'.repeat(300), 'ü😀✓é']) {
      expect(decodeEscaped(Buffer.from(text, 'utf8'))).toBe(text);
    }
  });

  it('escapes each byte that is not part of a well-formed sequence as U+DC00 + byte', () => {
    expect(decodeEscaped(bytes(0x61, 0xe9, 0x62))).toBe('a\udce9b'); // Latin-1 é
    expect(decodeEscaped(bytes(0xc0, 0x80))).toBe('\udcc0\udc80'); // overlong NUL
    expect(decodeEscaped(bytes(0xed, 0xa0, 0x80))).toBe('\udced\udca0\udc80'); // an encoded surrogate
    expect(decodeEscaped(bytes(0xf4, 0x90, 0x80, 0x80))).toBe('\udcf4\udc90\udc80\udc80'); // above U+10FFFF
    expect(decodeEscaped(bytes(0xe2, 0x9c))).toBe('\udce2\udc9c'); // truncated ✓
    expect(decodeEscaped(bytes(0xff, 0xc3, 0xa9))).toBe('\udcffé');
  });

  it('is injective: random byte strings round-trip through encodeEscaped, and lengths agree', () => {
    const random = prng('bytes');
    for (let n = 0; n < 3000; n++) {
      // Biased towards bytes that make (in)valid multi-byte sequences.
      const b = Uint8Array.from({ length: random.int(0, 12) }, () =>
        random.pick([random.int(0, 0x7f), random.int(0x80, 0xbf), random.int(0xc0, 0xff), 0xe2, 0x9c, 0x93, 0xf0, 0x9f]),
      );
      const text = decodeEscaped(b);
      expect(Buffer.from(encodeEscaped(text)).equals(Buffer.from(b)), `bytes ${Buffer.from(b).toString('hex')}`).toBe(true);
      expect(escapedByteLength(text)).toBe(b.length);
    }
  });

  it('gives distinct counter keys to values that differ only in invalid bytes (a lossy decode would not)', () => {
    const key = (b: Uint8Array) => counterKey('rl:', 'd', [{ key: 'user', value: decodeEscaped(b) }], 'fixed_window', 60_000);
    const latin1 = [bytes(0x6a, 0xe9), bytes(0x6a, 0xe8), bytes(0x6a, 0xef, 0xbf, 0xbd)]; // 'jé', 'jè' in Latin-1; 'j' + U+FFFD
    const keys = latin1.map(key);
    expect(new Set(keys).size).toBe(3);
    expect(new Set(latin1.map((b) => Buffer.from(b).toString('utf8'))).size).toBe(1); // the old, lossy decode: all 'j\ufffd'
  });

  it('shows escaped bytes as U+FFFD for output that must be valid UTF-8', () => {
    expect(wellFormed('a\udce9b😀')).toBe('a\ufffdb😀');
    // Lone high surrogates too, and a pair split by order: every lone half, and only those, is replaced.
    expect(wellFormed('\ud800x\udc00\ud800\ud800\udc00\ud83d')).toBe('\ufffdx\ufffd\ufffd\ud800\udc00\ufffd');
  });
});
