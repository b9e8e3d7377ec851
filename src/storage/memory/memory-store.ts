/**
 * The embedded counter store: algorithm states in one Map, decided by the shared batch logic
 * (apply-batch.ts). Everything runs synchronously inside apply(), so a batch is atomic within the process.
 *
 * Memory is bounded twice:
 * - expiry: each state is kept for the ttl its algorithm asked for. An expired state is dropped when its key
 *   is read, and an incremental sweep visits a few entries on every call (no timer), so idle keys go too.
 * - size: at most `maxKeys` entries. The Map's insertion order is the recency order (a read or write moves
 *   the key to the end); when full, a bounded scan from the least recently used end frees expired entries,
 *   and if none is found the least recently used entry is evicted. An evicted key starts afresh, which for
 *   a rate limiter errs on the side of admitting.
 */
import { RateLimitError } from '../../core/errors.js';
import type { AlgorithmName } from '../../algorithms/types.js';
import type { CounterStore, LimitCheck, LimitOutcome } from '../counter-store.js';
import { applyBatch, type StateAccess } from './apply-batch.js';

export interface MemoryStoreOptions {
  /** Most keys held at once (integer >= 1). */
  readonly maxKeys: number;
}

interface Entry {
  readonly algorithm: AlgorithmName;
  readonly state: unknown;
  /** Epoch ms; the entry is dead from this instant on. */
  readonly expiresAt: number;
}

/** Entries the sweep examines per apply() call. */
const SWEEP_STEP = 16;
/** Entries examined from the LRU end for an expired one before evicting the LRU entry. */
const EVICT_SCAN = 32;

export class MemoryStore implements CounterStore {
  readonly kind = 'memory';
  private readonly entries = new Map<string, Entry>();
  private readonly maxKeys: number;
  private sweep: Iterator<[string, Entry]> | undefined;
  private closed = false;

  constructor(options: MemoryStoreOptions) {
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) {
      throw new RangeError(`MemoryStore maxKeys must be an integer >= 1, got ${options.maxKeys}`);
    }
    this.maxKeys = options.maxKeys;
  }

  /** Keys currently held (expired ones not yet freed included). */
  get size(): number {
    return this.entries.size;
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

  isReady(): boolean {
    return !this.closed;
  }

  close(): Promise<void> {
    this.closed = true;
    this.entries.clear();
    this.sweep = undefined;
    return Promise.resolve();
  }

  private access(nowMs: number): StateAccess {
    return {
      read: (key, check) => {
        const entry = this.entries.get(key);
        if (entry === undefined) return undefined;
        this.entries.delete(key);
        if (entry.expiresAt <= nowMs) return undefined;
        this.entries.set(key, entry); // most recently used
        return entry.algorithm === check.algorithm ? entry.state : undefined;
      },
      write: (key, state, ttlMs, check) => {
        this.entries.delete(key);
        if (this.entries.size >= this.maxKeys) this.makeRoom(nowMs);
        this.entries.set(key, { algorithm: check.algorithm, state, expiresAt: nowMs + ttlMs });
      },
    };
  }

  /** Frees at least one entry: expired ones near the LRU end if any, else the least recently used. */
  private makeRoom(nowMs: number): void {
    let examined = 0;
    let freed = false;
    for (const [key, entry] of this.entries) {
      if (examined++ >= EVICT_SCAN) break;
      if (entry.expiresAt <= nowMs) {
        this.entries.delete(key);
        freed = true;
      }
    }
    if (!freed) {
      const lru = this.entries.keys().next();
      if (lru.done !== true) this.entries.delete(lru.value);
    }
  }

  /** Visits up to SWEEP_STEP entries, deleting the expired ones; restarts from the oldest when done. */
  private sweepStep(nowMs: number): void {
    this.sweep ??= this.entries.entries();
    for (let i = 0; i < SWEEP_STEP; i++) {
      const step = this.sweep.next();
      if (step.done === true) {
        this.sweep = undefined;
        return;
      }
      const [key, entry] = step.value;
      if (entry.expiresAt <= nowMs) this.entries.delete(key);
    }
  }
}
