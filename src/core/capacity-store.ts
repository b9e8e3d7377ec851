/**
 * A CounterStore decorator that decides the checks of capacity rules (vocab/capacity-rule.ts) in process, from a token
 * bucket per resource holding this replica's granted share — at most min(grant, requests_per_unit) per window,
 * refilled continuously — and passes the other checks to the store it wraps, keeping the batch contract of
 * counter-store.ts: a request is admitted iff every enforced check allows it; when a local check rejects, the
 * store's checks are only read (hits 0); when the store rejects or fails, the local tokens go back.
 *
 * One bucket per resource and replica (not per descriptor value): the grant is the replica's share of the
 * resource, for all the traffic of the rules that name it. Memory: one small object per configured resource.
 */
import type { Clock } from '../vocab/clock.js';
import type { CapacityShares } from '../vocab/capacity-rule.js';
import { applyRest } from '../storage/split-batch.js';
import { healthOf, type ApplyOptions, type CounterStore, type LimitCheck, type LimitOutcome, type Refund, type StoreHealth } from '../storage/counter-store.js';

interface Bucket {
  tokens: number;
  atMs: number;
}

export class CapacityRuleStore implements CounterStore {
  readonly kind: string;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly inner: CounterStore,
    private readonly shares: CapacityShares,
    private readonly clock: Clock,
  ) {
    this.kind = inner.kind;
  }

  apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    // Rules without `capacity` pass straight through: the inner store's own promise, not one more (an async
    // wrapper costs a promise and three turns of the microtask queue per request).
    for (const c of checks) if (c.capacity !== undefined) return this.applyCapacity(checks, nowMs, options);
    return this.inner.apply(checks, nowMs, options);
  }

  private async applyCapacity(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    const now = this.clock.nowMs();
    const outcomes = new Array<LimitOutcome>(checks.length);
    const taken: (Bucket | undefined)[] = new Array<Bucket | undefined>(checks.length);
    const rest: number[] = [];
    let admitted = true;
    checks.forEach((c, i) => {
      if (c.capacity === undefined) return void rest.push(i);
      const allowance = Math.max(0, Math.min(this.shares.grant(c.capacity.resource), c.limit));
      this.shares.observe(c.capacity.resource, c.hits);
      const bucket = this.refill(c.capacity.resource, allowance, c.windowMs, now);
      const fits = bucket.tokens >= c.hits;
      if (fits && c.hits > 0) {
        bucket.tokens -= c.hits;
        taken[i] = bucket;
      }
      if (!fits && c.enforce) admitted = false;
      const missing = fits ? 1 : c.hits - bucket.tokens;
      const resetMs = allowance > 0 ? Math.ceil((missing * c.windowMs) / allowance) : c.windowMs;
      outcomes[i] = { allowed: fits, remaining: Math.floor(bucket.tokens), resetMs };
    });
    const putBack = (): void => taken.forEach((b, i) => b !== undefined && (b.tokens += checks[i]!.hits));
    const decided = await applyRest(this.inner, checks, rest, admitted, putBack, nowMs, options);
    rest.forEach((i, k) => (outcomes[i] = decided.outcomes[k]!));
    return outcomes;
  }

  /** Refunds (is_negative_hits, a cancelled delay) concern the store's own keys: passed through. */
  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    await this.inner.refund?.(refunds, nowMs);
  }

  isReady(): boolean {
    return this.inner.isReady();
  }

  health(): StoreHealth {
    return healthOf(this.inner);
  }

  /** Gives the shares back, then closes the store it wraps. */
  async close(): Promise<void> {
    await this.shares.close?.();
    await this.inner.close();
  }

  /** The resource's bucket, refilled to `nowMs` at `allowance` per window and clamped to it (a smaller grant applies at once). */
  private refill(resource: string, allowance: number, windowMs: number, nowMs: number): Bucket {
    let bucket = this.buckets.get(resource);
    if (bucket === undefined) {
      bucket = { tokens: allowance, atMs: nowMs };
      this.buckets.set(resource, bucket);
    }
    const elapsed = Math.max(0, nowMs - bucket.atMs);
    bucket.tokens = Math.min(allowance, bucket.tokens + (elapsed * allowance) / windowMs);
    bucket.atMs = Math.max(bucket.atMs, nowMs);
    return bucket;
  }
}
