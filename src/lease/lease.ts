/**
 * One replica's lease on one counter key: units claimed from the shared limit (already counted there) that
 * this replica admits from locally. Pure bookkeeping on an injected time; lease-manager.ts claims and gives
 * back, lease-store.ts decides with it.
 */
import type { LeaseAlgorithm, LeaseSpec } from '../algorithms/lease-support.js';

/** The parameters a lease was claimed under; a check with other ones (a reload changed them) needs a new lease. */
export interface LeaseTerms {
  readonly algorithm: LeaseAlgorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
  readonly spec: LeaseSpec;
}

export function sameTerms(a: LeaseTerms, b: LeaseTerms): boolean {
  return (
    a.algorithm === b.algorithm &&
    a.limit === b.limit &&
    a.windowMs === b.windowMs &&
    a.burst === b.burst &&
    a.spec.size === b.spec.size &&
    a.spec.ttlMs === b.spec.ttlMs
  );
}

/** How long a spent lease (the limit had fewer units than asked) answers "no quota" before asking again. */
export const SPENT_RECHECK_MS = 100;

export class Lease {
  /** Units admitted from this lease (taken and not put back). */
  used = 0;
  /** Start of the window the units were counted in (window algorithms). */
  readonly windowStart: number;
  /** Units counted in Redis for this lease. */
  readonly granted: number;
  /** When the lease ends: claim + ttl, and no later than the window's end (window algorithms). */
  expiresAt = 0;
  /** The claim: when, and its reset (ms from then). */
  readonly claimedAt: number;
  readonly resetMs: number;
  /** The claim got fewer units than it asked for: the limit had no more. */
  private short = false;
  /** The shared remaining at the claim: `remaining` is this less local use. */
  private readonly remainingBefore: number;
  /** token_bucket: from this instant the bucket would have been full without the claim; the lease shrinks after it. */
  private readonly decayFrom: number;

  constructor(
    readonly key: string,
    readonly terms: LeaseTerms,
    claimedAt: number,
    /** Units asked for; fewer granted means the limit had no more (the lease is `spent` once they are used). */
    wanted: number,
    granted: number,
    /** The limit's remaining before the claim: what `remaining` is reported from (less local use). */
    remainingBefore: number,
    /** The claim's reset (ms from claimedAt): when granted, the algorithm's; else until a request's hits fit. */
    resetMs: number,
    /** When fewer than wanted were granted: ms from claimedAt until a whole claim could be granted. */
    againMs = 0,
  ) {
    const { algorithm, windowMs, limit, burst } = terms;
    this.windowStart = claimedAt - (claimedAt % windowMs);
    this.granted = granted;
    this.claimedAt = claimedAt;
    this.resetMs = resetMs;
    this.remainingBefore = remainingBefore;
    if (algorithm === 'token_bucket') {
      // The bucket held fewer than remainingBefore + 1 tokens, so it was at least (burst - remainingBefore - 1)
      // tokens short of full: without the claim it would not be full again before that many refills.
      const shortOfFull = Math.max(0, burst - remainingBefore - 1);
      this.decayFrom = limit === 0 ? Infinity : claimedAt + Math.floor((shortOfFull * windowMs) / limit);
    } else {
      this.decayFrom = Infinity;
    }
    this.setEnd(claimedAt, wanted, granted, resetMs, againMs);
  }

  private setEnd(claimedAt: number, wanted: number, granted: number, resetMs: number, againMs: number): void {
    const { algorithm, windowMs, spec } = this.terms;
    let end = claimedAt + spec.ttlMs;
    if (algorithm !== 'token_bucket') end = Math.min(end, this.windowStart + windowMs);
    // Short (fewer granted than wanted): a bucket refills and a sliding window's previous count fades, so ask
    // again when a whole claim would be granted; with nothing granted, as soon as the request's hits fit.
    this.short = granted < wanted;
    // Other replicas give units back when their leases end; a spent replica looks again every SPENT_RECHECK_MS
    // (a claim, not a trip per rejected request) so that returned units are not left unused for a whole ttl.
    if (granted < wanted) end = Math.min(end, claimedAt + Math.max(1, againMs), claimedAt + SPENT_RECHECK_MS);
    if (granted === 0) end = Math.min(end, claimedAt + Math.max(1, resetMs));
    this.expiresAt = end;
  }

  /**
   * The claim found fewer units than it asked for, and fewer than `hits` of what the limit had left then remain:
   * asking again for `hits` is pointless until expiry. A request that would have fitted in what the limit had
   * left (a claim got nothing because a bigger request asked) is not refused by this lease.
   */
  spent(hits: number): boolean {
    return this.short && hits > this.remaining();
  }

  /** The window the units were counted in is over (window algorithms): they can be neither used nor given back. */
  windowOver(nowMs: number): boolean {
    return this.terms.algorithm !== 'token_bucket' && nowMs >= this.windowStart + this.terms.windowMs;
  }

  expired(nowMs: number): boolean {
    return nowMs >= this.expiresAt || nowMs < this.claimedAt;
  }

  /**
   * Units this replica may still admit at `nowMs`. token_bucket: once the bucket would have refilled to full
   * without the claim, every further token of refill takes one leased token away (rounded against us), so the
   * lease plus the bucket never hold more than its capacity (docs/leases.md).
   */
  usable(nowMs: number): number {
    const left = this.granted - this.used;
    if (nowMs <= this.decayFrom) return left;
    const { limit, windowMs } = this.terms;
    const lost = Math.ceil(((nowMs - this.decayFrom) * limit) / windowMs);
    return Math.max(0, Math.min(left, this.granted - lost - this.used));
  }

  /** Takes `hits` units if they are usable now. */
  take(hits: number, nowMs: number): boolean {
    if (hits > this.usable(nowMs)) return false;
    this.used += hits;
    return true;
  }

  /** Puts back units taken for a request that was rejected after all (another limit said no). */
  putBack(hits: number): void {
    this.used = Math.max(0, this.used - hits);
  }

  /** Reported remaining: the shared remaining at the claim less local use since. */
  remaining(): number {
    return Math.max(0, this.remainingBefore - this.used);
  }

  /**
   * ms until a rejected request may try again: the claim's reset when it got nothing (the time until the hits
   * fit) or for a fixed window (its end); otherwise the lease's end, when this replica asks the store again.
   */
  retryAfter(nowMs: number): number {
    if (this.granted === 0 || this.terms.algorithm === 'fixed_window') return Math.max(1, this.resetAt(nowMs));
    return Math.max(1, this.expiresAt - nowMs);
  }

  /** ms until reset as seen at `nowMs`. */
  resetAt(nowMs: number): number {
    return Math.max(0, this.claimedAt + this.resetMs - nowMs);
  }
}
