/**
 * A CounterStore decorator that answers requests for keys known to be over their limit without asking the
 * wrapped store (Redis). Only exact knowledge is kept, so the answer is the one Redis would give:
 *
 * - What is cached: a check with hits = 1 that was not allowed, with remaining 0. Its resetMs is the time
 *   until one hit can be admitted, so no single hit is admitted for this key, limit and burst before
 *   `nowMs + resetMs` (hits only ever add to the state, and a rejected hit adds nothing, on any replica).
 *   The entry is keyed by key, limit and burst: a reload that changes the limit misses the cache. A key
 *   repeated within a batch is not cached from it (its later checks were decided on uncommitted state).
 * - When it answers: only when every check of the batch has hits = 1 and a live entry (`nowMs` strictly
 *   before its expiry). Then every check is rejected, nothing would be committed, and the outcome of each is
 *   {allowed: false, remaining: 0, resetMs: expiry - nowMs}. A batch with any other check goes to the store
 *   (a hits = 0 check needs the state to report remaining; more hits need a later retry time).
 * - Assumes every replica applies one limit and burst per key. While a reload rolls out, a replica with a
 *   higher limit may count hits on a key cached here as over: the cached rejection stays right for this
 *   replica's limit, but its resetMs may be short (Redis would then answer a later time).
 * - Checks carrying on_limit store state (delay, degrade, backoff) are neither answered nor cached here.
 * - Throttling: a ban (outcome.ban) is cached until it ends and answered as a live ban. An elastic check's
 *   rejection is not cached (borrowing may admit it before its resetMs, when the rule's aggregate frees up),
 *   unless it is a ban. Soft and share ceilings arrive as the check's limit and burst, so are keyed apart.
 * - Bounded: at most `maxEntries`, the oldest insertion leaves first; expired entries leave when looked up.
 */
import { healthOf, type ApplyOptions, type CounterStore, type LimitCheck, type LimitOutcome, type Refund, type StoreHealth } from './counter-store.js';

export interface OverLimitCacheOptions {
  /** Most entries kept (integer >= 1). */
  readonly maxEntries: number;
}

export interface OverLimitCacheStats {
  /** Batches answered from the cache (requests that did not reach the store). */
  readonly hits: number;
  readonly entries: number;
}

export class OverLimitCache implements CounterStore {
  readonly kind: string;
  /** entry key → epoch ms before which no single hit is admitted; Map order = insertion order. */
  private readonly until = new Map<string, number>();
  /** Entry keys whose rejection is a ban (answered with ban: 'active'); a subset of `until`'s keys. */
  private readonly banned = new Set<string>();
  private hits = 0;

  constructor(
    private readonly inner: CounterStore,
    private readonly options: OverLimitCacheOptions,
  ) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new Error(`maxEntries must be an integer >= 1, got ${options.maxEntries}`);
    }
    this.kind = inner.kind;
  }

  /** A refund may make room on a key cached as over: it is forgotten, so the next request asks the store. */
  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    for (const r of refunds) this.until.delete(r.key);
    await this.inner.refund?.(refunds, nowMs);
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    const cached = this.answer(checks, nowMs);
    if (cached) {
      this.hits++;
      return cached;
    }
    let outcomes: LimitOutcome[];
    try {
      outcomes = await this.inner.apply(checks, nowMs, options);
    } catch (error) {
      this.until.clear(); // as in isReady(): the store's state is unknown from here on
      this.banned.clear();
      throw error;
    }
    // A key repeated in the batch is decided on the state its earlier checks would leave, not on the stored
    // state, so its rejection says nothing about the stored state. Counted only when a rejection may be
    // cached (most requests are admitted: no map for them).
    let seen: Map<string, number> | undefined;
    for (let i = 0; i < checks.length; i++) {
      const check = checks[i]!;
      const o = outcomes[i];
      if (
        o &&
        check.hits === 1 &&
        check.onLimit === undefined &&
        check.countOver === undefined &&
        !o.allowed &&
        o.remaining === 0 &&
        o.resetMs > 0 &&
        (check.elastic === undefined || o.ban !== undefined)
      ) {
        if (seen === undefined) {
          seen = new Map<string, number>();
          for (const c of checks) seen.set(c.key, (seen.get(c.key) ?? 0) + 1);
        }
        if (seen.get(check.key) === 1) this.remember(entryKey(check), nowMs + o.resetMs, o.ban !== undefined);
      }
    }
    return outcomes;
  }

  isReady(): boolean {
    return this.keepWhile(this.inner.isReady());
  }

  /** ResilientStore asks this (not isReady) before every call, so an outage is noticed here too. */
  health(): StoreHealth {
    const health = healthOf(this.inner);
    this.keepWhile(health.healthy);
    return health;
  }

  /**
   * What was learnt from a store we lost contact with may not hold when it is back (a restarted Redis is
   * empty): start afresh, so every replica again answers as the store does.
   */
  private keepWhile(ready: boolean): boolean {
    if (!ready) {
      this.until.clear();
      this.banned.clear();
    }
    return ready;
  }

  stats(): OverLimitCacheStats {
    return { hits: this.hits, entries: this.until.size };
  }

  close(): Promise<void> {
    this.until.clear();
    this.banned.clear();
    return this.inner.close();
  }

  private answer(checks: readonly LimitCheck[], nowMs: number): LimitOutcome[] | undefined {
    // Nothing cached (the usual state while keys are under their limits): no entry key built per request.
    if (checks.length === 0 || this.until.size === 0) return undefined;
    const outcomes: LimitOutcome[] = [];
    for (const check of checks) {
      // A check with on_limit store state may be delayed or degraded, and its rejections are counted: the store decides.
      // A check counted past its limit (shadow mode, count_every_hit) must reach the store to be counted.
      if (check.hits !== 1 || check.onLimit !== undefined || check.countOver !== undefined) return undefined;
      const key = entryKey(check);
      const until = this.until.get(key);
      if (until === undefined) return undefined;
      if (nowMs >= until) {
        this.until.delete(key);
        this.banned.delete(key);
        return undefined;
      }
      outcomes.push({ allowed: false, remaining: 0, resetMs: until - nowMs, ...(this.banned.has(key) ? { ban: 'active' as const } : {}) });
    }
    return outcomes;
  }

  private remember(key: string, until: number, banned: boolean): void {
    this.until.delete(key);
    this.until.set(key, until);
    if (banned) this.banned.add(key);
    else this.banned.delete(key);
    // O(1) eviction of the oldest insertion; expired entries also leave when they are next looked up.
    if (this.until.size > this.options.maxEntries) {
      const oldest = this.until.keys().next().value!;
      this.until.delete(oldest);
      this.banned.delete(oldest);
    }
  }
}

/** Key, limit and burst: the state key already names the algorithm and the window. */
function entryKey(check: LimitCheck): string {
  return `${check.limit}\u0000${check.burst}\u0000${check.key}`;
}
