/**
 * A CounterStore decorator that decides checks with a `lease` from units leased to this replica
 * (lease-manager.ts), and the rest with the store it wraps, keeping the batch contract of counter-store.ts:
 *
 * - a request is admitted iff every enforced check allows it, whether decided from a lease or by the store;
 * - units are taken from leases first; the other checks then go to the store in one call; when that call
 *   rejects (or fails), the units go back into their leases: a rejected request consumes nothing;
 * - when a leased check rejects, the other checks are only read (hits 0), never counted.
 *
 * The wrapped store is the whole ordinary path (over-limit cache, failure modes): a check whose lease
 * cannot be had (Redis unreachable, deadline, contention) is decided there, so when Redis is down a replica
 * admits from its valid leases until they end, then FAILURE_MODE applies.
 *
 * Under a lease, `remaining` is the limit's remaining at the last claim less this replica's use since.
 */
import type { Clock } from '../vocab/clock.js';
import { timerDelay } from '../vocab/timer.js';
import { healthOf, type ApplyOptions, type CounterStore, type LimitCheck, type LimitOutcome, type Refund, type StoreHealth } from '../storage/counter-store.js';
import { applyRest } from '../storage/split-batch.js';
import { LeaseManager, type LeaseStats, type Reservation } from './lease-manager.js';

export interface LeaseStoreOptions {
  readonly clock: Clock;
  /** How often ended leases are given back, once a check with a lease came (default 100 ms; 0 = only by sweep() calls). */
  readonly sweepIntervalMs?: number;
}

export class LeaseStore implements CounterStore {
  readonly kind: string;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly inner: CounterStore,
    readonly leases: LeaseManager,
    private readonly options: LeaseStoreOptions,
  ) {
    this.kind = inner.kind;
  }

  /** Whether ended leases are being swept: from the first check with a lease on (no timer for rules without). */
  get sweeping(): boolean {
    return this.timer !== undefined;
  }

  private sweep(): void {
    const every = this.options.sweepIntervalMs ?? 100;
    if (this.timer !== undefined || every <= 0 || this.closed) return;
    this.timer = setInterval(() => this.leases.sweep(), every);
    this.timer.unref();
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    // Rules without `lease` pass straight through (no allocation on the ordinary path).
    if (!checks.some((c) => c.lease !== undefined)) return this.inner.apply(checks, nowMs, options);
    const terms = checks.map((c) => LeaseManager.termsOf(c));
    if (terms.every((t) => t === undefined)) return this.inner.apply(checks, nowMs, options);
    this.sweep(); // leases may be taken from now on

    const deadline = new DeadlineSignal(options?.deadlineMs, this.options.clock);
    let reserved: (Reservation | undefined)[];
    try {
      reserved = await Promise.all(
        checks.map(async (c, i): Promise<Reservation | undefined> => {
          const t = terms[i];
          if (t === undefined) return undefined;
          if (c.hits > 0) return this.leases.reserve(c.key, t, c.hits, deadline.promise());
          const lease = this.leases.held(c.key, t, this.options.clock.nowMs());
          return lease === undefined ? undefined : { lease, taken: true };
        }),
      );
    } finally {
      deadline.clear();
    }

    const now = this.options.clock.nowMs();
    const leases = reserved.map((r) => r?.lease);
    const allowed = reserved.map((r) => r?.taken === true);
    const rest: number[] = [];
    let admitted = true;
    checks.forEach((c, i) => {
      if (reserved[i] === undefined) rest.push(i);
      else if (!allowed[i] && c.enforce) admitted = false;
    });
    const putBack = () => checks.forEach((c, i) => allowed[i] && c.hits > 0 && leases[i]!.putBack(c.hits));

    const decided = await applyRest(this.inner, checks, rest, admitted, putBack, nowMs, options);

    const outcomes: LimitOutcome[] = new Array<LimitOutcome>(checks.length);
    rest.forEach((i, k) => (outcomes[i] = decided.outcomes[k]!));
    checks.forEach((_, i) => {
      const lease = leases[i];
      if (lease === undefined) return;
      outcomes[i] = allowed[i]
        ? { allowed: true, remaining: lease.remaining(), resetMs: lease.resetAt(now) }
        : { allowed: false, remaining: lease.remaining(), resetMs: lease.retryAfter(now) };
    });
    return outcomes;
  }

  refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    return this.inner.refund?.(refunds, nowMs) ?? Promise.resolve();
  }

  /** Give every lease back (after a reload: limits may have changed). */
  giveBackAll(): Promise<void> {
    return this.leases.giveBackAll();
  }

  stats(): LeaseStats {
    return this.leases.stats();
  }

  isReady(): boolean {
    return this.inner.isReady();
  }

  health(): StoreHealth {
    return healthOf(this.inner);
  }

  /** Gives unused units back (SIGTERM), then closes the store it wraps. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.timer = undefined;
    await this.leases.giveBackAll();
    await this.inner.close();
  }
}

/** A promise that resolves at the request's deadline, made only if someone waits for it. */
class DeadlineSignal {
  private timer: NodeJS.Timeout | undefined;
  private made: Promise<void> | undefined;

  constructor(
    private readonly deadlineMs: number | undefined,
    private readonly clock: Clock,
  ) {}

  promise(): Promise<void> | undefined {
    if (this.deadlineMs === undefined) return undefined;
    return (this.made ??= new Promise<void>((resolve) => {
      // 2 ms early: the store behind still answers by the failure mode within the deadline.
      this.timer = setTimeout(resolve, timerDelay(this.deadlineMs! - 2 - this.clock.nowMs()));
    }));
  }

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
  }
}
