/**
 * A rate limiter fed by a resource's capacity, read as queries per second (as Doorman's QPS limiter reads it):
 * permits are spaced evenly, one every 1000 / capacity ms, with no burst — an idle limiter hands out one permit at
 * once, the next one interval later. A capacity of 0 hands out none until the capacity rises. When the capacity
 * changes the spacing follows at once (the next permit is due one new interval after the last one).
 *
 * Waits are bounded: each has a timeout (default `maxWaitMs`) and may take an AbortSignal; the queue holds at most
 * `maxQueued` waiters (memory stays bounded when the capacity drops to 0 under load). Waiters are served in order,
 * and `tryAcquire` never jumps the queue.
 */
import { CapacityError } from './capacity-error.js';
import type { ClientTime } from './time.js';

/** What feeds the limiter: a Resource, or anything with a capacity and a 'capacity' event. */
export interface CapacitySource {
  readonly capacity: number;
  on(event: 'capacity', listener: (capacity: number, previous: number) => void): unknown;
  off(event: 'capacity', listener: (capacity: number, previous: number) => void): unknown;
}

export interface LimiterOptions {
  /** Longest wait of `wait()` without its own timeout, in ms. Default 30,000. */
  readonly maxWaitMs?: number;
  /** Most waiters queued at once; more are refused with LIMITER_QUEUE_FULL. Default 10,000. */
  readonly maxQueued?: number;
}

export interface WaitOptions {
  readonly signal?: AbortSignal;
  /** Overrides the limiter's maxWaitMs for this wait. */
  readonly timeoutMs?: number;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
  readonly cancel: AbortController;
}

export class RateLimiter {
  private readonly maxWaitMs: number;
  private readonly maxQueued: number;
  private readonly queue: Waiter[] = [];
  private lastIssuedMs = Number.NEGATIVE_INFINITY;
  private pumping = false;
  private pumpWake = new AbortController();
  private closed = false;
  private readonly onCapacity = (): void => this.pumpWake.abort();

  constructor(
    private readonly source: CapacitySource,
    private readonly time: ClientTime,
    options: LimiterOptions = {},
  ) {
    this.maxWaitMs = options.maxWaitMs ?? 30_000;
    this.maxQueued = options.maxQueued ?? 10_000;
    source.on('capacity', this.onCapacity);
  }

  /** Permits per second now (the source's capacity). */
  get rate(): number {
    return this.source.capacity;
  }

  /** Waiters queued. */
  get queued(): number {
    return this.queue.length;
  }

  /** Takes a permit if one is due now and nobody is queued ahead; never waits. */
  tryAcquire(): boolean {
    if (this.closed || this.queue.length > 0) return false;
    return this.take(this.time.nowMs());
  }

  /** Resolves when a permit is granted; rejects on timeout, abort, a full queue or close (coded CapacityError). */
  wait(options: WaitOptions = {}): Promise<void> {
    if (this.closed) return Promise.reject(new CapacityError('CLIENT_CLOSED', 'limiter closed'));
    if (options.signal?.aborted) return Promise.reject(new CapacityError('LIMITER_ABORTED', 'wait aborted'));
    if (this.queue.length === 0 && this.take(this.time.nowMs())) return Promise.resolve();
    if (this.queue.length >= this.maxQueued) return Promise.reject(new CapacityError('LIMITER_QUEUE_FULL', `${this.maxQueued} waiters already queued`));
    return new Promise<void>((resolve, reject) => {
      const cancel = new AbortController();
      const waiter: Waiter = { resolve, reject, cancel };
      const leave = (error: CapacityError): void => {
        const at = this.queue.indexOf(waiter);
        if (at < 0) return;
        this.queue.splice(at, 1);
        cancel.abort();
        if (this.queue.length === 0) this.pumpWake.abort(); // let the pump end rather than sleep on
        reject(error);
      };
      const onAbort = (): void => leave(new CapacityError('LIMITER_ABORTED', 'wait aborted'));
      options.signal?.addEventListener('abort', onAbort, { once: true });
      cancel.signal.addEventListener('abort', () => options.signal?.removeEventListener('abort', onAbort), { once: true });
      const timeoutMs = options.timeoutMs ?? this.maxWaitMs;
      this.time.sleep(timeoutMs, cancel.signal).then(
        () => leave(new CapacityError('LIMITER_TIMEOUT', `no permit within ${timeoutMs} ms`)),
        () => undefined, // served or aborted: the sleep was cancelled
      );
      this.queue.push(waiter);
      void this.pump();
    });
  }

  /** Rejects every waiter with CLIENT_CLOSED and stops listening to the source. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.source.off('capacity', this.onCapacity);
    for (const waiter of this.queue.splice(0)) {
      waiter.cancel.abort();
      waiter.reject(new CapacityError('CLIENT_CLOSED', 'limiter closed'));
    }
    this.pumpWake.abort();
  }

  /** When the next permit is due (Infinity while the capacity is 0). */
  private dueMs(): number {
    const rate = this.source.capacity;
    if (!(rate > 0)) return Number.POSITIVE_INFINITY;
    return this.lastIssuedMs + 1000 / rate;
  }

  private take(nowMs: number): boolean {
    if (this.dueMs() > nowMs) return false;
    this.lastIssuedMs = nowMs;
    return true;
  }

  /** Serves the queue in order, sleeping until the next permit is due (or the capacity changes). One at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const now = this.time.nowMs();
        if (this.take(now)) {
          const waiter = this.queue.shift()!;
          waiter.cancel.abort();
          waiter.resolve();
          continue;
        }
        if (this.pumpWake.signal.aborted) this.pumpWake = new AbortController();
        const due = this.dueMs();
        // Capacity 0: sleep until a capacity event (or a waiter's own timeout empties the queue, checked hourly).
        const ms = Number.isFinite(due) ? Math.max(1, Math.ceil(due - now)) : 3_600_000;
        await this.time.sleep(ms, this.pumpWake.signal).catch(() => undefined);
      }
    } finally {
      this.pumping = false;
    }
  }
}
