/**
 * Redis Cluster hash slot of a key: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key's bytes
 * in UTF-8, modulo 16384, where only the hash tag is hashed when the key has one (the text between the
 * first `{` and the next `}`, if that text is not empty). Keys from vocab/keys.ts always carry a tag, so all
 * keys of one descriptor share a slot and can go to one script call.
 */

const TABLE = buildTable();

function buildTable(): Uint16Array {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ b) & 0xff]!;
  return crc;
}

/** The part of the key Redis hashes (the non-empty hash tag, else the whole key). */
export function hashedPart(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

export const SLOT_COUNT = 16384;

export function keySlot(key: string): number {
  return crc16(Buffer.from(hashedPart(key), 'utf8')) % SLOT_COUNT;
}
