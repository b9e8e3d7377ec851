/**
 * Counters in memcached, kept as envoyproxy/ratelimit keeps them there: one item per limit and window, named
 * after the window (`<prefix><domain>_<key>_<value>_..._<window start in s>` with MEMCACHE_KEY_FORMAT=envoy,
 * `<native key>:<window start ms>` otherwise), holding the count as a decimal number, created with `add`
 * and counted with `incr`. Only fixed_window runs here (rules with other algorithms, leases, bans, elastic
 * throttling or on_limit are refused when the rules load: app/memcached-rules.ts).
 *
 * memcached has no scripts, so a batch cannot be decided in one atomic step. It is decided increment first:
 * every check's hits are added (`incr`; `add` when the item is missing; `incr` again when a concurrent `add`
 * won), and the count each increment returns decides the check, as an INCR does on Redis: no replica is ever
 * admitted past a limit, however many count at once. A rejected batch then takes back what it added (`decr`),
 * so that it consumes no quota; between the two, a concurrent request may see the higher count and be
 * rejected (the race accepted: a false rejection near the limit, never an admission past it). A give-back
 * that fails leaves those hits counted (the safe side).
 *
 * A key memcached cannot hold (longer than 250 bytes, or with spaces or control characters) is kept under
 * `<prefix>#<SHA-256 of it>`: still counted, but not shared with the reference, which cannot store it at all.
 */
import { createHash } from 'node:crypto';
import { StoreError } from '../../vocab/errors.js';
import type { CounterStore, LimitCheck, LimitOutcome, Refund, StoreHealth } from '../counter-store.js';
import type { MemcachedClient } from './memcached-client.js';

/** memcached reads an expiry above 30 days as a Unix time. */
const MAX_RELATIVE_EXPIRY_S = 30 * 24 * 3600;
const MAX_KEY_BYTES = 250;

export interface MemcachedStoreOptions {
  readonly client: MemcachedClient;
  /** CACHE_KEY_PREFIX, kept in front of the hashed form of an over-long key. */
  readonly keyPrefix: string;
  /** Called by close() (stops the SRV refresh). */
  readonly onClose?: () => void;
}

export class MemcachedStore implements CounterStore {
  readonly kind = 'memcached';
  private lastError: string | undefined;

  constructor(private readonly options: MemcachedStoreOptions) {}

  get client(): MemcachedClient {
    return this.options.client;
  }

  /** The memcached key of a check at nowMs. */
  itemKey(check: Pick<LimitCheck, 'key' | 'keyFormat' | 'windowMs'>, nowMs: number): string {
    const key = check.keyFormat === 'envoy' ? check.key : `${check.key}:${nowMs - (nowMs % check.windowMs)}`;
    return legalKey(key) ? key : `${this.options.keyPrefix}#${createHash('sha256').update(key).digest('base64url')}`;
  }

  async apply(checks: readonly LimitCheck[], nowMs: number): Promise<LimitOutcome[]> {
    for (const c of checks) {
      if (c.algorithm !== 'fixed_window') throw new StoreError('STORE_UNAVAILABLE', `memcached counts fixed_window limits only, not ${c.algorithm} (${c.key})`);
    }
    const keys = checks.map((c) => this.itemKey(c, nowMs));
    let counts: number[];
    try {
      counts = await this.count(checks, keys, nowMs);
    } catch (error) {
      throw this.failed(error);
    }
    const admitted = checks.every((c, i) => !c.enforce || counts[i]! <= c.limit);
    // What stays counted: admitted and within the limit; or past it when countOver says so.
    const keep = checks.map((c, i) => c.hits === 0 || c.countOver === 'always' || (admitted && (counts[i]! <= c.limit || c.countOver === 'admitted')));
    const giveBack = checks.flatMap((c, i) => (keep[i] ? [] : [this.options.client.decr(keys[i]!, c.hits).catch(() => undefined)]));
    if (giveBack.length > 0) await Promise.all(giveBack);
    this.lastError = undefined;
    return checks.map((c, i) => {
      const after = counts[i]!;
      const before = after - c.hits;
      const allowed = after <= c.limit;
      const counted = keep[i]! && allowed && admitted;
      const windowStart = nowMs - (nowMs % c.windowMs);
      return { allowed, remaining: Math.max(0, c.limit - (counted ? after : before)), resetMs: windowStart + c.windowMs - nowMs };
    });
  }

  /**
   * The count of every check after its hits were added (checks with 0 hits: read only). Checks repeating one
   * key are one increment by their total, each reading the count as if they had been counted in batch order.
   */
  private async count(checks: readonly LimitCheck[], keys: readonly string[], nowMs: number): Promise<number[]> {
    const client = this.options.client;
    const reads: string[] = [];
    const totals = new Map<string, { hits: number; exptime: number }>();
    checks.forEach((c, i) => {
      const key = keys[i]!;
      if (c.hits === 0) reads.push(key);
      else {
        const t = totals.get(key);
        if (t === undefined) totals.set(key, { hits: c.hits, exptime: expiry(c.windowMs, nowMs) });
        else t.hits += c.hits;
      }
    });
    const [values, finals] = await Promise.all([
      reads.length > 0 ? client.getMulti(reads) : undefined,
      Promise.all([...totals].map(async ([key, t]) => [key, await this.increment(key, t.hits, t.exptime)] as const)),
    ]);
    // Per key: the count before this batch's hits, then each check adds its own in batch order.
    const running = new Map(finals.map(([key, after]) => [key, after - totals.get(key)!.hits]));
    return checks.map((c, i) => {
      const key = keys[i]!;
      if (c.hits > 0) {
        const after = running.get(key)! + c.hits;
        running.set(key, after);
        return after;
      }
      const text = values?.get(key);
      const n = text === undefined ? 0 : Number(text.trim());
      return Number.isFinite(n) ? n : 0;
    });
  }

  /** incr; add when missing; incr again when another client's add came first. Resolves to the count. */
  private async increment(key: string, hits: number, exptime: number): Promise<number> {
    const client = this.options.client;
    const after = await client.incr(key, hits);
    if (after !== undefined) return after;
    if (await client.add(key, String(hits), exptime)) return hits;
    const again = await client.incr(key, hits);
    if (again === undefined) throw new Error(`memcached: ${key} neither incremented nor added`);
    return again;
  }

  /** Refunds of fixed_window counts of the current window (`decr`, never below 0); other refunds are ignored. */
  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    const work = refunds
      .filter((r) => r.algorithm === 'fixed_window' && r.windowStart === nowMs - (nowMs % r.windowMs) && r.units > 0)
      .map((r) => this.options.client.decr(this.itemKey({ key: r.key, windowMs: r.windowMs }, nowMs), r.units).catch(() => undefined));
    await Promise.all(work);
  }

  private failed(error: unknown): StoreError {
    const message = error instanceof Error ? error.message : String(error);
    this.lastError = message;
    return error instanceof StoreError ? error : new StoreError('STORE_UNAVAILABLE', message, { cause: error });
  }

  /** Resolves once every server answers `version`; rejects after `timeoutMs` with the last cause. */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.options.client.ping();
        this.lastError = undefined;
        return;
      } catch (error) {
        this.lastError = (error as Error).message;
        if (Date.now() >= until) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(200, 20 * 2 ** Math.min(attempt, 4), Math.max(1, until - Date.now()))));
      }
    }
  }

  isReady(): boolean {
    return this.options.client.reachable && this.lastError === undefined;
  }

  health(): StoreHealth {
    const connected = this.options.client.reachable;
    const problem = this.lastError ?? this.options.client.problem;
    const healthy = connected && this.lastError === undefined;
    return { connected, healthy, ...(healthy || problem === undefined ? {} : { problem }) };
  }

  close(): Promise<void> {
    this.options.onClose?.();
    this.options.client.close();
    return Promise.resolve();
  }
}

/** What memcached's text protocol accepts as a key (as the reference's client checks it). */
export function legalKey(key: string): boolean {
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return false;
  }
  return true;
}

/** Seconds until the window ends (and one more, for clocks a little apart); a Unix time past 30 days. */
export function expiry(windowMs: number, nowMs: number): number {
  const endMs = nowMs - (nowMs % windowMs) + windowMs;
  const seconds = Math.ceil((endMs - nowMs) / 1000) + 1;
  return seconds <= MAX_RELATIVE_EXPIRY_S ? seconds : Math.ceil(endMs / 1000) + 1;
}
