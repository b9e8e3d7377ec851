/**
 * The memory store's entries as columns of typed arrays indexed by a slot number, with a key index (key-index.ts)
 * from key to slot. Compared with one object per entry this keeps no per-entry object, no boxed numbers and no
 * Map re-insertion per access (measured in bench/memory-per-key.ts; see docs/memory.md).
 *
 * Every used slot is on exactly one of two doubly linked recency lists (least recently used at the head):
 * - ORDINARY: keys with quota left, the ones eviction may free;
 * - PROTECTED: keys whose last decision left them exhausted (remaining 0), which eviction frees only once
 *   they have expired, so flooding new keys cannot hand an over-limit key fresh quota.
 * Moving a slot to the tail or between lists is O(1).
 *
 * A state is kept packed in up to three float64 columns when its algorithm has a fixed-size state
 * (state-codec.ts); other states (sliding_window_log's log) stay objects in `objects`, a Map holding only
 * those slots (a dense array of them cost 8-12 bytes per key for nothing when no key has a log).
 * Keys are found through a KeyIndex (key-index.ts) rather than a Map: about 25 bytes less per key.
 */
import { KeyIndex } from './key-index.js';

export const FREE = 0;
export const ORDINARY = 1;
export const PROTECTED = 2;
export type ListId = typeof ORDINARY | typeof PROTECTED;

const NONE = -1;
const INITIAL_CAPACITY = 1024;

export class SlotTable {
  private readonly index = new KeyIndex();
  /** States that are not packed into the columns (sliding_window_log), by slot. */
  readonly objects = new Map<number, unknown>();
  /** Epoch ms from which the entry is dead. */
  expiresAt = new Float64Array(0);
  s0 = new Float64Array(0);
  s1 = new Float64Array(0);
  s2 = new Float64Array(0);
  /** Algorithm code (state-codec.ts), 0 for a free slot. */
  algorithm = new Uint8Array(0);
  list = new Uint8Array(0);
  /** Bytes the entry is accounted for (memory-store.ts). */
  bytes = new Uint32Array(0);
  private prev = new Int32Array(0);
  private next = new Int32Array(0);
  private readonly head = [NONE, NONE, NONE];
  private readonly tail = [NONE, NONE, NONE];
  private readonly length = [0, 0, 0];
  /** Free slots below `capacity`, chained through `next`. */
  private freeHead = NONE;
  private capacity = 0;

  /** @param maxSlots the most slots ever needed (the key bound); the columns grow by doubling up to it. */
  constructor(private readonly maxSlots: number) {}

  get size(): number {
    return this.index.size;
  }

  /** The slot holding `key`, or -1. */
  find(key: string): number {
    return this.index.find(key);
  }

  /** Slots the columns hold (used or not). */
  get allocated(): number {
    return this.capacity;
  }

  count(list: ListId): number {
    return this.length[list]!;
  }

  /** The least recently used slot of `list`, or -1. */
  oldest(list: ListId): number {
    return this.head[list]!;
  }

  /** The slot after `slot` in its list (towards the most recently used), or -1. */
  newer(slot: number): number {
    return this.next[slot]!;
  }

  /** A fresh slot for `key`, at the tail of `list`. The caller fills the state columns. */
  add(key: string, list: ListId): number {
    flatten(key);
    if (this.freeHead === NONE) this.grow();
    const slot = this.freeHead;
    this.freeHead = this.next[slot]!;
    this.index.insert(key, slot);
    this.append(slot, list);
    return slot;
  }

  /** Makes `slot` the most recently used of `list` (moving it there from its current list). */
  touch(slot: number, list: ListId): void {
    this.unlink(slot);
    this.append(slot, list);
  }

  remove(slot: number): void {
    this.unlink(slot);
    this.index.delete(slot);
    this.objects.delete(slot);
    this.algorithm[slot] = 0;
    this.bytes[slot] = 0;
    this.list[slot] = FREE;
    this.next[slot] = this.freeHead;
    this.freeHead = slot;
  }

  clear(): void {
    this.index.clear();
    this.objects.clear();
    for (const list of [ORDINARY, PROTECTED]) {
      this.head[list] = NONE;
      this.tail[list] = NONE;
      this.length[list] = 0;
    }
    this.capacity = 0;
    this.freeHead = NONE;
    this.resize(0);
  }

  private append(slot: number, list: ListId): void {
    const last = this.tail[list]!;
    this.prev[slot] = last;
    this.next[slot] = NONE;
    if (last === NONE) this.head[list] = slot;
    else this.next[last] = slot;
    this.tail[list] = slot;
    this.list[slot] = list;
    this.length[list]!++;
  }

  private unlink(slot: number): void {
    const list = this.list[slot]!;
    const p = this.prev[slot]!;
    const n = this.next[slot]!;
    if (p === NONE) this.head[list] = n;
    else this.next[p] = n;
    if (n === NONE) this.tail[list] = p;
    else this.prev[n] = p;
    this.length[list]!--;
  }

  private grow(): void {
    const old = this.capacity;
    const capacity = Math.min(Math.max(INITIAL_CAPACITY, old * 2), this.maxSlots);
    if (capacity <= old) throw new Error(`slot table full (${this.maxSlots} slots): the caller must evict first`);
    this.resize(capacity);
    // chain the new slots into the free list, lowest first
    for (let s = capacity - 1; s >= old; s--) {
      this.next[s] = this.freeHead;
      this.freeHead = s;
    }
    this.capacity = capacity;
  }

  private resize(capacity: number): void {
    this.expiresAt = grown(Float64Array, this.expiresAt, capacity);
    this.s0 = grown(Float64Array, this.s0, capacity);
    this.s1 = grown(Float64Array, this.s1, capacity);
    this.s2 = grown(Float64Array, this.s2, capacity);
    this.algorithm = grown(Uint8Array, this.algorithm, capacity);
    this.list = grown(Uint8Array, this.list, capacity);
    this.bytes = grown(Uint32Array, this.bytes, capacity);
    this.prev = grown(Int32Array, this.prev, capacity);
    this.next = grown(Int32Array, this.next, capacity);
    this.index.resize(capacity);
  }
}

/** Defeats dead-code elimination of the conversion in flatten(). */
let _sink = 0;

/**
 * Flattens a string in place. Keys arrive as the rope (cons string) that concatenation built, and a Map
 * keeps the whole rope alive: about 370 heap bytes per key against about 100 for the flat string
 * (bench/memory-per-key.ts). Converting to a number makes V8 flatten the rope; called once per stored key.
 */
function flatten(key: string): void {
  _sink ^= Number(key) | 0;
}

type Column = Float64Array | Uint8Array | Uint32Array | Int32Array;

/** A column of `capacity` elements holding the first elements of `from`. */
function grown<T extends Column>(make: new (length: number) => T, from: T, capacity: number): T {
  const to = new make(capacity);
  const kept = Math.min(from.length, capacity);
  if (kept > 0) to.set(from.subarray(0, kept));
  return to;
}
