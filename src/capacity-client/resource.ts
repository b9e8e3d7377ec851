/**
 * One resource the application holds a share of: its wants, priority and fallback mode, the lease the server
 * granted, and the capacity the application must keep to. The capacity is the lease's while the lease runs; once
 * it has expired (the server could not be reached to refresh it), or before the first grant, it is the fallback
 * the application chose:
 * - pessimistic: 0 (stop using the resource; the safe choice when over-use hurts more than idling);
 * - optimistic: what it wants (keep going as if granted; the choice when the server is only advisory);
 * - safe: the last `safe_capacity` the server sent (Doorman's per-client safe share), else `safeCapacity` given.
 * Capacity changes are announced with a 'capacity' event (new value, previous value).
 */
import { EventEmitter } from 'node:events';
import type { WireLease, WireResourceRequest } from './doorman-wire.js';

export type FallbackMode = 'pessimistic' | 'optimistic' | 'safe';

export interface ResourceOptions {
  /** Priority sent with each request (higher served first by servers that honour it; Doorman ignores it). Default 0. */
  readonly priority?: number;
  /** What capacity to use without a running lease. Default 'pessimistic'. */
  readonly fallback?: FallbackMode;
  /** The safe capacity before the server has sent one (fallback 'safe'). Default 0. */
  readonly safeCapacity?: number;
}

/** A lease in client terms: times in ms on the client's clock. */
export interface ClientLease {
  readonly capacity: number;
  readonly expiryMs: number;
  readonly refreshIntervalMs: number;
}

/** The parts of the client a resource calls back into. */
export interface ResourceOwner {
  readonly nowMs: () => number;
  /** New wants: refresh soon. */
  asked(resource: Resource): void;
  release(resource: Resource): Promise<void>;
}

export interface ResourceEvents {
  capacity: [capacity: number, previous: number];
}

function checkWants(wants: number): number {
  if (!Number.isFinite(wants) || wants < 0) throw new RangeError(`wants must be a finite number ≥ 0, got ${wants}`);
  return wants;
}

export class Resource extends EventEmitter<ResourceEvents> {
  readonly priority: number;
  readonly fallback: FallbackMode;
  private currentWants: number;
  private currentLease: ClientLease | undefined;
  private lastSafe: number;
  private current: number;
  private released = false;

  constructor(
    readonly id: string,
    wants: number,
    options: ResourceOptions,
    private readonly owner: ResourceOwner,
  ) {
    super();
    this.currentWants = checkWants(wants);
    this.priority = Math.trunc(options.priority ?? 0);
    this.fallback = options.fallback ?? 'pessimistic';
    this.lastSafe = options.safeCapacity ?? 0;
    this.current = this.fallbackCapacity();
  }

  /** The capacity the application may use now. */
  get capacity(): number {
    return this.current;
  }

  get wants(): number {
    return this.currentWants;
  }

  /** The running lease, if any (undefined before the first grant, after expiry and after release). */
  get lease(): ClientLease | undefined {
    return this.currentLease;
  }

  /** The last safe capacity the server sent (or the one given in the options). */
  get safeCapacity(): number {
    return this.lastSafe;
  }

  /** True while the capacity comes from the fallback mode rather than a lease. */
  get inFallback(): boolean {
    return this.currentLease === undefined;
  }

  get isReleased(): boolean {
    return this.released;
  }

  /** Changes what this client wants; the client asks the server soon (not waiting for the next refresh). */
  ask(wants: number): void {
    if (this.released) return;
    this.currentWants = checkWants(wants);
    if (this.currentLease === undefined) this.set(this.fallbackCapacity());
    this.owner.asked(this);
  }

  /** Changes what this client wants from the next refresh on, without asking at once (demand tracked continuously). */
  setWants(wants: number): void {
    if (this.released) return;
    this.currentWants = checkWants(wants);
    if (this.currentLease === undefined) this.set(this.fallbackCapacity());
  }

  /** Gives the share back to the server and stops refreshing it; the capacity becomes 0. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    this.currentLease = undefined;
    this.set(0);
    await this.owner.release(this);
  }

  /** @internal The request entry of the next bulk refresh: `has` is the running lease, sent back to the server. */
  toWire(nowMs: number): WireResourceRequest {
    const entry: WireResourceRequest = { resource_id: this.id, priority: this.priority, wants: this.currentWants };
    const lease = this.currentLease;
    if (lease !== undefined && lease.expiryMs > nowMs) {
      entry.has = { expiry_time: Math.floor(lease.expiryMs / 1000), refresh_interval: Math.round(lease.refreshIntervalMs / 1000), capacity: lease.capacity };
    }
    return entry;
  }

  /** @internal A grant from the server. */
  applyGrant(gets: WireLease, safeCapacity: number | null | undefined, nowMs: number): void {
    if (this.released) return;
    if (typeof safeCapacity === 'number' && Number.isFinite(safeCapacity)) this.lastSafe = safeCapacity;
    const expiryMs = Number(gets.expiry_time) * 1000;
    const capacity = Number(gets.capacity);
    if (!Number.isFinite(capacity) || expiryMs <= nowMs) return; // an already expired lease grants nothing
    this.currentLease = { capacity, expiryMs, refreshIntervalMs: Math.max(1, Number(gets.refresh_interval)) * 1000 };
    this.set(capacity);
  }

  /** @internal Drops the lease once it has expired and falls back; true when it did. */
  expireIfDue(nowMs: number): boolean {
    const lease = this.currentLease;
    if (lease === undefined || lease.expiryMs > nowMs) return false;
    this.currentLease = undefined;
    this.set(this.fallbackCapacity());
    return true;
  }

  private fallbackCapacity(): number {
    if (this.released) return 0;
    switch (this.fallback) {
      case 'pessimistic':
        return 0;
      case 'optimistic':
        return this.currentWants;
      case 'safe':
        return this.lastSafe;
    }
  }

  private set(capacity: number): void {
    const previous = this.current;
    if (capacity === previous) return;
    this.current = capacity;
    this.emit('capacity', capacity, previous);
  }
}
