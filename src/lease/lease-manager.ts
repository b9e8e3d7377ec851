/**
 * The leases of one replica: at most one per counter key, one claim in flight per key (requests arriving
 * meanwhile wait for it, so a burst costs one Redis trip), expiry by ttl and by the window's end, and
 * give-back of unused units on expiry, on reload and on shutdown. Bounded: at most `maxLeases` keys (the
 * oldest lease is given back to make room).
 *
 * Claims and give-backs go to a LeaseBackend (Redis: storage/redis/lease-scripts.ts). A claim that fails
 * or is not answered by the request's deadline leaves the request to the ordinary path (and so to the
 * failure mode); its units, if Redis counted them after all, still land in the lease.
 */
import type { Clock } from '../vocab/clock.js';
import type { LimitCheck } from '../storage/counter-store.js';
import { isLeaseAlgorithm } from '../algorithms/lease-support.js';
import type { ClaimArgs, ClaimReply, GiveBackArgs } from '../storage/redis/lease-scripts.js';
import { Lease, sameTerms, type LeaseTerms } from './lease.js';

export interface LeaseBackend {
  claim(args: ClaimArgs, nowMs: number): Promise<ClaimReply>;
  /** Units actually returned. */
  giveBack(args: GiveBackArgs, nowMs: number): Promise<number>;
  /** False while the backend has no connection (no claim is tried then). */
  connected(): boolean;
}

export interface LeaseManagerOptions {
  readonly backend: LeaseBackend;
  readonly clock: Clock;
  /** Keys with a lease at most (default 100 000). */
  readonly maxLeases?: number;
  /** Told about failed claims and give-backs (throttle it). */
  readonly log?: (message: string, error?: unknown) => void;
}

export interface LeaseStats {
  /** Claims sent to the store. */
  readonly claims: number;
  /** Give-backs sent to the store. */
  readonly giveBacks: number;
  /** Units counted in the store for leases. */
  readonly leased: number;
  /** Units given back into the window (or bucket) they came from. */
  readonly returned: number;
  /** Units leased that were neither admitted nor given back (window over, bucket refilled, replica failure). */
  readonly unused: number;
  /** Keys with a lease now. */
  readonly held: number;
}

/** What reserve() got: units taken from `lease`, or a spent lease to reject from. */
export interface Reservation {
  readonly lease: Lease;
  readonly taken: boolean;
}

/**
 * How many claims a request waits for at most (a burst of n requests on a lease of size s waits for about n / s
 * claims, one at a time) before it gives up on the lease and asks the store directly; its deadline ends the
 * wait sooner.
 */
const MAX_ROUNDS = 64;

export class LeaseManager {
  private readonly leases = new Map<string, Lease>();
  /** Claims in flight by key; each resolves to whether it succeeded. */
  private readonly claiming = new Map<string, Promise<boolean>>();
  private readonly giving = new Set<Promise<void>>();
  private readonly maxLeases: number;
  private counts = { claims: 0, giveBacks: 0, leased: 0, returned: 0, unused: 0 };

  constructor(private readonly options: LeaseManagerOptions) {
    this.maxLeases = options.maxLeases ?? 100_000;
  }

  /** The lease terms of a check, or undefined when it cannot use a lease. */
  static termsOf(check: LimitCheck): LeaseTerms | undefined {
    // A check counted past its limit (shadow mode) is decided by the store, where the count lives.
    if (check.lease === undefined || check.keyFormat === 'envoy' || check.countOver !== undefined || !isLeaseAlgorithm(check.algorithm)) return undefined;
    return { algorithm: check.algorithm, limit: check.limit, windowMs: check.windowMs, burst: check.burst, spec: check.lease };
  }

  /** The current lease of `key` under these terms, if one is valid now (no claim). */
  held(key: string, terms: LeaseTerms, nowMs: number): Lease | undefined {
    const lease = this.leases.get(key);
    if (lease === undefined) return undefined;
    if (!sameTerms(lease.terms, terms) || lease.expired(nowMs)) {
      this.retire(lease, nowMs);
      return undefined;
    }
    return lease;
  }

  /**
   * Takes `need` units of `key` from this replica's lease, claiming one first if needed: `taken` true (the
   * caller puts them back if the request is rejected after all), or false when the lease shows the limit has
   * fewer than `need` left (the caller rejects). Undefined when `need` is more than a lease holds, or no lease
   * could be had in time (the store failed, is not connected, or the deadline came): the caller then asks the
   * store as usual. Units are taken here, at once, so concurrent requests never count the same unit twice.
   */
  async reserve(key: string, terms: LeaseTerms, need: number, deadline: Promise<void> | undefined): Promise<Reservation | undefined> {
    // More hits than one lease holds: decided against the shared counter by the caller's store, leaving this
    // replica's lease as it is (a claim sized for it would retire the lease, and a short one would mark it
    // spent: every other request would then be rejected for it).
    if (need > terms.spec.size) return undefined;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const nowMs = this.options.clock.nowMs();
      const lease = this.held(key, terms, nowMs);
      if (lease !== undefined && lease.take(need, nowMs)) {
        return { lease, taken: true };
      }
      if (lease !== undefined && lease.spent(need)) return { lease, taken: false };
      let claim = this.claiming.get(key);
      if (claim === undefined) {
        if (!this.options.backend.connected()) return undefined;
        claim = this.startClaim(key, terms, need, lease);
      }
      // false: the claim failed, or the deadline came first.
      const claimed = await (deadline === undefined ? claim : Promise.race([claim, deadline.then(() => false)]));
      if (!claimed) return undefined;
    }
    return undefined;
  }

  /** Give back every lease now (reload, shutdown) and wait for the give-backs (at most `timeoutMs`). */
  async giveBackAll(timeoutMs = 2000): Promise<void> {
    const retireAll = () => {
      const nowMs = this.options.clock.nowMs();
      for (const lease of [...this.leases.values()]) this.retire(lease, nowMs);
    };
    retireAll();
    await this.settle(timeoutMs);
    // A claim that was in flight has installed its lease by now: give that back too.
    retireAll();
    await this.settle(timeoutMs);
  }

  /** Give back the leases that have ended (call it now and then; the store does every 100 ms). */
  sweep(): void {
    const nowMs = this.options.clock.nowMs();
    for (const lease of [...this.leases.values()]) if (lease.expired(nowMs)) this.retire(lease, nowMs);
  }

  /** Wait for claims and give-backs in flight (at most `timeoutMs`). */
  async settle(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.allSettled([...this.claiming.values(), ...this.giving]), limit]);
    clearTimeout(timer);
  }

  stats(): LeaseStats {
    return { ...this.counts, held: this.leases.size };
  }

  private track(key: string, claim: Promise<boolean>): Promise<boolean> {
    const tracked = claim.finally(() => {
      if (this.claiming.get(key) === tracked) this.claiming.delete(key);
    });
    this.claiming.set(key, tracked);
    return tracked;
  }

  private startClaim(key: string, terms: LeaseTerms, need: number, old: Lease | undefined): Promise<boolean> {
    // Leftovers too few for this request go back first, in the same pipeline and so before the claim.
    if (old !== undefined) this.retire(old, this.options.clock.nowMs());
    const claimedAt = this.options.clock.nowMs();
    const want = Math.max(terms.spec.size, need);
    this.counts.claims++;
    const args: ClaimArgs = { key, algorithm: terms.algorithm, limit: terms.limit, windowMs: terms.windowMs, burst: terms.burst, want, need };
    const claim = this.options.backend.claim(args, claimedAt).then(
      (reply) => {
        this.counts.leased += reply.granted;
        const lease = new Lease(key, terms, claimedAt, want, reply.granted, reply.remainingBefore, reply.resetMs, reply.againMs);
        const previous = this.leases.get(key);
        if (previous !== undefined) this.retire(previous, this.options.clock.nowMs());
        this.makeRoom();
        this.leases.set(key, lease);
        return true;
      },
      (error: unknown) => {
        this.options.log?.('lease claim failed; deciding by the store (and its failure mode)', error);
        return false;
      },
    );
    return this.track(key, claim);
  }

  private makeRoom(): void {
    while (this.leases.size >= this.maxLeases) {
      const oldest = this.leases.values().next().value as Lease;
      this.retire(oldest, this.options.clock.nowMs());
    }
  }

  /** Drops the lease and gives its usable units back into their window (or bucket). */
  private retire(lease: Lease, nowMs: number): void {
    if (this.leases.get(lease.key) === lease) this.leases.delete(lease.key);
    const left = lease.granted - lease.used;
    const usable = lease.windowOver(nowMs) ? 0 : lease.usable(nowMs);
    if (usable <= 0) {
      this.counts.unused += left;
      return;
    }
    const { terms } = lease;
    const args: GiveBackArgs = {
      key: lease.key,
      algorithm: terms.algorithm,
      limit: terms.limit,
      windowMs: terms.windowMs,
      units: usable,
      windowStart: lease.windowStart,
    };
    this.counts.giveBacks++;
    const giving = this.options.backend.giveBack(args, nowMs).then(
      (returned) => {
        this.counts.returned += returned;
        this.counts.unused += left - returned;
      },
      (error: unknown) => {
        this.counts.unused += left;
        this.options.log?.('lease give-back failed; the units stay counted until the window ends', error);
      },
    );
    const tracked = giving.finally(() => this.giving.delete(tracked));
    this.giving.add(tracked);
  }
}
