/**
 * Key → slot index of the slot table (slot-table.ts): an open-addressing hash table with linear probing over
 * an Int32Array of buckets, the keys themselves in one array indexed by slot and each key's hash in an
 * Int32Array column.
 *
 * It replaces a `Map<string, number>` plus a slot → key array: a Map entry costs about 29 bytes at 1M keys
 * (three tagged words per entry and half a bucket word), this costs a 4-byte hash and at most two 4-byte
 * buckets per slot (the table is never more than 2/3 full), and the key array is needed either way
 * (bench/memory-per-key.ts, docs/memory.md).
 *
 * The hash is seeded from crypto randomness per table, so which keys collide cannot be chosen from outside
 * (keys carry client-controlled descriptor values). Deletion shifts the following entries back (no
 * tombstones), so probe sequences stay as short as the load allows however many keys come and go.
 */
import { randomBytes } from 'node:crypto';

/** Buckets hold slot + 1; 0 is an empty bucket. */
const EMPTY = 0;

export class KeyIndex {
  /** The key stored in each slot, undefined for a free slot. */
  keys: (string | undefined)[] = [];
  private hashes = new Int32Array(0);
  private buckets = new Int32Array(0);
  private mask = -1;
  private count = 0;
  private readonly seed = randomBytes(4).readInt32LE(0);
  /** The last key hashed and its hash: a batch reads then writes the same key. */
  private lastKey = '';
  private lastHash = this.hash('');

  get size(): number {
    return this.count;
  }

  /** The slot holding `key`, or -1. */
  find(key: string): number {
    if (this.count === 0) return -1;
    const h = this.hashOf(key);
    const buckets = this.buckets;
    const mask = this.mask;
    for (let b = h & mask; ; b = (b + 1) & mask) {
      const entry = buckets[b]!;
      if (entry === EMPTY) return -1;
      const slot = entry - 1;
      if (this.hashes[slot] === h && this.keys[slot] === key) return slot;
    }
  }

  /** Records `key` (not present) in `slot` (free, below the capacity given to resize()). */
  insert(key: string, slot: number): void {
    const h = this.hashOf(key);
    this.keys[slot] = key;
    this.hashes[slot] = h;
    this.place(slot, h);
    this.count++;
  }

  /** Forgets the key of `slot` (which holds one). */
  delete(slot: number): void {
    const buckets = this.buckets;
    const mask = this.mask;
    let hole = this.hashes[slot]! & mask;
    while (buckets[hole] !== slot + 1) hole = (hole + 1) & mask;
    // Backward-shift deletion: move back each following entry of the run that may live in the hole.
    for (let b = (hole + 1) & mask; buckets[b] !== EMPTY; b = (b + 1) & mask) {
      const home = this.hashes[buckets[b]! - 1]! & mask;
      // the entry at b may move to the hole iff its home is not cyclically within (hole, b]
      if (((b - home) & mask) >= ((b - hole) & mask)) {
        buckets[hole] = buckets[b]!;
        hole = b;
      }
    }
    buckets[hole] = EMPTY;
    this.keys[slot] = undefined;
    this.count--;
  }

  /**
   * Sizes the per-slot columns for `capacity` slots (keeping the first ones) and rebuilds the buckets for
   * them: the smallest power of two above 1.5 × capacity, so the table is at most 2/3 full and always has an
   * empty bucket (which ends every probe).
   */
  resize(capacity: number): void {
    const hashes = new Int32Array(capacity);
    hashes.set(this.hashes.subarray(0, Math.min(capacity, this.hashes.length)));
    this.hashes = hashes;
    if (this.keys.length > capacity) this.keys.length = capacity;
    let size = 1;
    while (size <= capacity + (capacity >> 1)) size *= 2;
    this.buckets = new Int32Array(capacity === 0 ? 0 : size);
    this.mask = capacity === 0 ? -1 : size - 1;
    for (let slot = 0; slot < this.keys.length; slot++) {
      if (this.keys[slot] !== undefined) this.place(slot, this.hashes[slot]!);
    }
  }

  clear(): void {
    this.keys = [];
    this.count = 0;
    this.lastKey = '';
    this.lastHash = this.hash('');
    this.resize(0);
  }

  private place(slot: number, h: number): void {
    const buckets = this.buckets;
    const mask = this.mask;
    let b = h & mask;
    while (buckets[b] !== EMPTY) b = (b + 1) & mask;
    buckets[b] = slot + 1;
  }

  private hashOf(key: string): number {
    if (key !== this.lastKey) {
      this.lastHash = this.hash(key);
      this.lastKey = key;
    }
    return this.lastHash;
  }

  /** A seeded 32-bit hash: a multiply-rotate step per UTF-16 unit, then murmur3's finaliser. */
  private hash(key: string): number {
    let h = this.seed ^ key.length;
    for (let i = 0; i < key.length; i++) {
      h = Math.imul(h ^ key.charCodeAt(i), 0xcc9e2d51);
      h = (h << 15) | (h >>> 17);
    }
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    return h ^ (h >>> 16);
  }
}
