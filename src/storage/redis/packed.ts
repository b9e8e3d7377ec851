/**
 * Numbers as little-endian doubles, the packed form of the batch script's fields and replies (struct.pack /
 * struct.unpack '<d' in lua/batch.lua and lua/requests.lua): exact for every integer below 2^53.
 */
const LITTLE_ENDIAN_HOST = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/** The bytes of `values` as little-endian doubles (the host's order on every platform Node runs on today). */
export function packDoubles(values: Float64Array): Buffer {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  return LITTLE_ENDIAN_HOST ? bytes : Buffer.from(bytes).swap64();
}

/** The doubles of `bytes` (a multiple of 8 long). */
export function readDoubles(bytes: Buffer): number[] {
  const out: number[] = new Array<number>(bytes.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readDoubleLE(8 * i);
  return out;
}
