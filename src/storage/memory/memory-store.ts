/**
 * The embedded counter store: algorithm states in a slot table (slot-table.ts), decided by the shared batch
 * logic (apply-batch.ts). Everything runs synchronously inside apply(), so a batch is atomic within the
 * process.
 *
 * Memory is bounded three ways (docs/memory.md):
 * - expiry: each state is kept for the ttl its algorithm asked for. An expired state is dropped when its key
 *   is read, and an incremental sweep visits a few slots on every call (no timer), so idle keys go too.
 * - bytes: the entries' accounted bytes (ENTRY_BYTES + key length + the state's extra bytes, see
 *   entryBytes) stay within `maxBytes`.
 * - keys: at most `maxKeys` entries.
 *
 * Making room for a new key frees, in this order: expired entries found by a bounded scan from the least
 * recently used end of both lists; the least recently used key that still has quota (ORDINARY). A key left
 * with no quota (PROTECTED: its last commit left remaining 0, or a check was rejected with nothing left) is
 * never evicted before it expires, so flooding new keys cannot hand it fresh quota.
 * When every stored key is protected and unexpired, the new key is decided on a fresh state but NOT stored
 * (counted in stats().unstored): the request is answered as the first of its key, and nothing stored is
 * lost. An update of a key already stored is always kept. Each step is O(1) amortised: no full scans.
 */
import { RateLimitError } from '../../vocab/errors.js';
import { getAlgorithm } from '../../algorithms/registry.js';
import { giveBackUnits } from '../../algorithms/give-back.js';
import { giveBackAlgorithm, type CounterStore, type LimitCheck, type LimitOutcome, type Refund } from '../counter-store.js';
import { applyBatch, type StateAccess } from './apply-batch.js';
import { FREE, ORDINARY, PROTECTED, SlotTable, type ListId } from './slot-table.js';
import { CODECS } from './state-codec.js';

export interface MemoryStoreOptions {
  /** Most keys held at once (integer >= 1). */
  readonly maxKeys: number;
  /** Most bytes the entries are accounted for (integer >= 1); default DEFAULT_MAX_BYTES. */
  readonly maxBytes?: number;
}

/** The numbers behind the memory store's metrics. */
export interface MemoryStoreStats {
  readonly keys: number;
  /** Accounted bytes of the stored entries (see entryBytes). */
  readonly bytes: number;
  /** Keys protected from eviction (no quota left). */
  readonly protectedKeys: number;
  readonly maxKeys: number;
  readonly maxBytes: number;
  /** Expired entries freed (read, sweep or to make room), since start. */
  readonly expired: number;
  /** Live keys with quota left evicted to make room, since start. */
  readonly evicted: number;
  /** New keys decided but not stored because every stored key was protected, since start. */
  readonly unstored: number;
}

export const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Bytes of one entry besides its key's characters and its state's extra bytes: the key string's header,
 * its slot in the key index (hash, buckets, key array) and the slot columns, with their growth slack.
 * Measured with bench/memory-per-key.ts: about 90 bytes at 1M keys (heap + buffers after GC / keys, minus
 * the key length), about 100 in the worst layout (columns sized for the byte bound, short keys); 144 keeps
 * the accounting above the heap (64 MiB accounted = 53 MiB of heap + buffers with the defaults), see
 * docs/memory.md.
 */
export const ENTRY_BYTES = 144;

/** Slots the sweep examines per apply() call. */
const SWEEP_STEP = 16;
/** Entries examined from the least recently used end of each list for expired ones when making room. */
const EVICT_SCAN = 32;

/** The accounted size of an entry: ENTRY_BYTES + key length (keys are ASCII) + the state's extra bytes. */
export function entryBytes(key: string, algorithm: LimitCheck['algorithm'], state: unknown): number {
  return ENTRY_BYTES + key.length + CODECS[algorithm].extraBytes(state);
}

export class MemoryStore implements CounterStore {
  readonly kind = 'memory';
  private readonly table: SlotTable;
  private readonly maxKeys: number;
  private readonly maxBytes: number;
  private bytes = 0;
  private sweepCursor = 0;
  private expired = 0;
  private evicted = 0;
  private unstored = 0;
  private closed = false;

  constructor(options: MemoryStoreOptions) {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) {
      throw new RangeError(`MemoryStore maxKeys must be an integer >= 1, got ${options.maxKeys}`);
    }
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
      throw new RangeError(`MemoryStore maxBytes must be an integer >= 1, got ${maxBytes}`);
    }
    this.maxKeys = options.maxKeys;
    this.maxBytes = maxBytes;
    // Every entry is accounted for more than ENTRY_BYTES, so no more slots than this can ever be used.
    this.table = new SlotTable(Math.min(options.maxKeys, Math.ceil(maxBytes / ENTRY_BYTES)));
  }

  /** Keys currently held (expired ones not yet freed included). */
  get size(): number {
    return this.table.size;
  }

  stats(): MemoryStoreStats {
    return {
      keys: this.table.size,
      bytes: this.bytes,
      protectedKeys: this.table.count(PROTECTED),
      maxKeys: this.maxKeys,
      maxBytes: this.maxBytes,
      expired: this.expired,
      evicted: this.evicted,
      unstored: this.unstored,
    };
  }

  apply(checks: readonly LimitCheck[], nowMs: number): Promise<LimitOutcome[]> {
    if (this.closed) return Promise.reject(new RateLimitError('INTERNAL', 'memory store is closed'));
    try {
      this.sweepStep(nowMs);
      return Promise.resolve(applyBatch(this.access(nowMs), checks, nowMs));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    if (this.closed) return Promise.reject(new RateLimitError('INTERNAL', 'memory store is closed'));
    const access = this.access(nowMs);
    for (const r of refunds) {
      const check: LimitCheck = { key: r.key, algorithm: r.algorithm, limit: r.limit, windowMs: r.windowMs, burst: 1, hits: 0, enforce: false };
      const params = { limit: r.limit, windowMs: r.windowMs, burst: 1, ...(r.calendar ? { windowStartMs: r.windowStart } : {}) };
      const state = access.read(r.key, check);
      const { returned, next } = giveBackUnits(giveBackAlgorithm(r.algorithm), state, nowMs, params, r.units, r.windowStart);
      if (returned === 0) continue;
      // No state is a full bucket: stored as one that is full now.
      const ev = getAlgorithm(r.algorithm).evaluate(next, nowMs, params, 0);
      access.write(r.key, next ?? ev.next, ev.ttlMs, check, false);
    }
    return Promise.resolve();
  }

  isReady(): boolean {
    return !this.closed;
  }

  close(): Promise<void> {
    this.closed = true;
    this.table.clear();
    this.bytes = 0;
    return Promise.resolve();
  }

  private access(nowMs: number): StateAccess {
    const t = this.table;
    return {
      read: (key, check) => {
        const slot = this.live(key, nowMs);
        if (slot === undefined) return undefined;
        t.touch(slot, t.list[slot] as ListId);
        const codec = CODECS[check.algorithm];
        return t.algorithm[slot] === codec.code ? codec.read(t, slot) : undefined;
      },
      write: (key, state, ttlMs, check, exhausted) => {
        const codec = CODECS[check.algorithm];
        const bytes = entryBytes(key, check.algorithm, state);
        const list: ListId = exhausted ? PROTECTED : ORDINARY;
        let slot = t.find(key);
        if (slot >= 0) {
          // An update is always kept (dropping it would hand the key fresh quota); room is made if it grew.
          this.bytes -= t.bytes[slot]!;
          this.makeRoom(nowMs, 0, bytes, slot);
          t.touch(slot, list);
        } else {
          if (bytes > this.maxBytes || !this.makeRoom(nowMs, 1, bytes, -1)) {
            this.unstored++;
            return;
          }
          slot = t.add(key, list);
        }
        if (t.algorithm[slot] === CODECS.sliding_window_log.code) t.objects.delete(slot);
        t.algorithm[slot] = codec.code;
        codec.write(t, slot, state);
        t.expiresAt[slot] = nowMs + ttlMs;
        t.bytes[slot] = bytes;
        this.bytes += bytes;
      },
      rejected: (key) => {
        const slot = this.live(key, nowMs);
        if (slot !== undefined) t.touch(slot, PROTECTED);
      },
    };
  }

  /** The slot of `key` if it holds an unexpired entry; an expired one is freed. */
  private live(key: string, nowMs: number): number | undefined {
    const slot = this.table.find(key);
    if (slot < 0) return undefined;
    if (this.table.expiresAt[slot]! > nowMs) return slot;
    this.expire(slot);
    return undefined;
  }

  /**
   * Frees entries until `addKeys` more keys and `addBytes` more bytes fit, never freeing `keep`.
   * False when that needs evicting a protected key (nothing is evicted beyond what was tried).
   */
  private makeRoom(nowMs: number, addKeys: number, addBytes: number, keep: number): boolean {
    while (this.table.size + addKeys > this.maxKeys || this.bytes + addBytes > this.maxBytes) {
      if (this.freeExpired(nowMs, keep)) continue;
      let victim = this.table.oldest(ORDINARY);
      if (victim >= 0 && victim === keep) victim = this.table.newer(victim);
      if (victim < 0) return false;
      this.free(victim);
      this.evicted++;
    }
    return true;
  }

  /** Frees the expired entries among the EVICT_SCAN least recently used of each list; true if any. */
  private freeExpired(nowMs: number, keep: number): boolean {
    let freed = false;
    for (const list of [ORDINARY, PROTECTED] as const) {
      let slot = this.table.oldest(list);
      for (let i = 0; i < EVICT_SCAN && slot >= 0; i++) {
        const next = this.table.newer(slot);
        if (slot !== keep && this.table.expiresAt[slot]! <= nowMs) {
          this.expire(slot);
          freed = true;
        }
        slot = next;
      }
    }
    return freed;
  }

  private free(slot: number): void {
    this.bytes -= this.table.bytes[slot]!;
    this.table.remove(slot);
  }

  /** Frees an expired entry (read, sweep or to make room), counted in stats().expired. */
  private expire(slot: number): void {
    this.free(slot);
    this.expired++;
  }

  /** Visits up to SWEEP_STEP slots, freeing the expired entries; wraps around at the end of the table. */
  private sweepStep(nowMs: number): void {
    const t = this.table;
    for (let i = 0; i < SWEEP_STEP; i++) {
      if (this.sweepCursor >= t.allocated) {
        this.sweepCursor = 0;
        return;
      }
      const slot = this.sweepCursor++;
      if (t.list[slot] !== FREE && t.expiresAt[slot]! <= nowMs) this.expire(slot);
    }
  }
}
