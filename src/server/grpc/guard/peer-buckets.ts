/**
 * A token bucket on an injected clock: `take` spends a token, refilled at `ratePerS` up to `burst`. The rapid
 * reset guard keeps one per connection (connection-guard.ts).
 */
export class TokenBucket {
  private tokens: number;
  private atMs: number;

  constructor(
    private readonly burst: number,
    private readonly ratePerS: number,
    private readonly nowMs: () => number,
  ) {
    this.tokens = burst;
    this.atMs = nowMs();
  }

  /** Spends one token; false when none was left. */
  take(): boolean {
    const now = this.nowMs();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.atMs) * this.ratePerS) / 1000);
    this.atMs = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/**
 * One token bucket per peer address (the opt-in address refusal, GRPC_RESET_REFUSE_ADDRESS), on an injected clock: `take` spends a token (a stream the peer reset),
 * refilled at `ratePerS` up to `burst`. A peer that runs dry is refused until its bucket has refilled to half
 * its burst, so reconnecting at once does not buy a fresh burst (CVE-2023-44487, rapid reset). The map is
 * bounded: past `maxPeers` the peer seen least recently is forgotten (a full bucket is what a new one gets).
 */
export interface PeerBucketOptions {
  readonly burst: number;
  readonly ratePerS: number;
  readonly nowMs: () => number;
  /** Peers remembered (default 10,000). */
  readonly maxPeers?: number;
}

interface Bucket {
  tokens: number;
  atMs: number;
  /** Ran dry: refused until refilled to half the burst. */
  dry: boolean;
}

export class PeerBuckets {
  // Map iteration order is insertion order: re-inserting on use keeps the least recent first.
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly options: PeerBucketOptions) {}

  /** Spends one token of `peer`; false when none was left (the peer is now refused). */
  take(peer: string): boolean {
    const b = this.refill(peer);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return true;
    }
    b.dry = true;
    return false;
  }

  /** Whether `peer` is refused now (ran dry and not yet refilled to half its burst). */
  refused(peer: string): boolean {
    if (!this.buckets.has(peer)) return false;
    return this.refill(peer).dry;
  }

  private refill(peer: string): Bucket {
    const now = this.options.nowMs();
    let b = this.buckets.get(peer);
    if (b === undefined) {
      b = { tokens: this.options.burst, atMs: now, dry: false };
      if (this.buckets.size >= (this.options.maxPeers ?? 10_000)) this.buckets.delete(this.buckets.keys().next().value!);
    } else {
      this.buckets.delete(peer);
      b.tokens = Math.min(this.options.burst, b.tokens + ((now - b.atMs) * this.options.ratePerS) / 1000);
      b.atMs = now;
      if (b.dry && b.tokens >= this.options.burst / 2) b.dry = false;
    }
    this.buckets.set(peer, b);
    return b;
  }
}
