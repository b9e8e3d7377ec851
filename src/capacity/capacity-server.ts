/**
 * The capacity service's decisions, protocol-free: the four RPCs of doorman.Capacity over plain objects
 * (doorman-messages.ts), on in-memory lease stores, with an injected clock. Per request and resource: drop expired
 * leases, then either echo the client's reported `has` (learning mode, right after state was lost) or run the
 * resource's algorithm, record the lease and answer it. As Doorman: one resource per (template, id), created
 * on first use; templates re-read on every decision so a reload applies at once.
 */
import type { Clock } from '../vocab/clock.js';
import { RequestTooLargeError } from '../vocab/errors.js';
import { decideShare } from './algorithms.js';
import { capacityAsks, MAX_AMOUNT, serverCapacityAsks, type Ask, type Asks, type ResourceAsk } from './asks.js';
import type { CapacityConfig, ResourceTemplate } from './config.js';
import { idKey, idText } from './ids.js';
import { LeaseStore, type StoredLease } from './resource-leases.js';
import { PriorityBands } from './priority-bands.js';
import type * as M from './doorman-messages.js';
import { algorithmMessage } from './doorman-messages.js';

export type { Ask } from './asks.js';
export { capacityAsks, serverCapacityAsks } from './asks.js';

export interface CapacityObserver {
  /** A lease was granted (refreshes included). */
  onGrant?(resource: string): void;
  /** Leases dropped because they expired. */
  onExpired?(resource: string, n: number): void;
}

export interface CapacityServerOptions {
  readonly clock: Clock;
  /** The resource file in force (read on every decision, so reloads apply at once). */
  readonly config: () => CapacityConfig;
  /** Our own address, answered by Discovery. */
  readonly address: () => string;
  /** When the state was last lost (this process's start with the memory store): learning mode counts from it. */
  readonly stateSinceMs: number;
  /** The capacity of a resource when it comes from a parent server (parent.ts); default the template's. */
  readonly capacityOf?: (id: string, template: ResourceTemplate) => number;
  readonly observer?: CapacityObserver;
  /** Most leases held over all resources (a bound on memory); past it new clients are refused. */
  readonly maxLeases?: number;
  /** Most resources with a lease at once (CAPACITY_MAX_RESOURCES); past it a request naming a new one is refused. */
  readonly maxResources?: number;
}

export class Resource {
  /** Every lease of the resource: the totals answered and exported, expiry, the global cap. */
  store = new LeaseStore();
  /**
   * The same leases by priority band (priority-bands.ts), only for a template with `priority_bands: true`:
   * otherwise priorities are ignored, as by Doorman.
   */
  bands: PriorityBands | undefined;
  /** When this resource's state began (Redis store: the marker key's time); undefined: the server's. */
  stateSinceMs: number | undefined;
  constructor(
    readonly id: string,
    public template: ResourceTemplate,
  ) {
    syncBands(this);
  }
}

/** Makes the bands of `res` agree with its template (after a reload switched priority_bands on or off). */
export function syncBands(res: Resource): void {
  const want = res.template.algorithm.priorityBands;
  if (!want) res.bands = undefined;
  else if (res.bands === undefined) {
    const bands = new PriorityBands();
    res.store.forEach((client, lease) => bands.assign(client, undefined, lease));
    res.bands = bands;
  }
}

export class CapacityServer {
  private readonly resources = new Map<string, Resource>();
  private leases = 0;
  /**
   * Set by the Redis store: whether a resource has asks queued or in flight (its Resource must then stay), and
   * what to forget of a resource dropped here.
   */
  holds: ((id: string) => boolean) | undefined;
  onDrop: ((id: string) => void) | undefined;

  constructor(private readonly options: CapacityServerOptions) {}

  discovery(): M.DiscoveryResponse {
    return { mastership: { master_address: this.options.address() }, is_master: true };
  }

  getCapacity(req: M.GetCapacityRequest): M.GetCapacityResponse {
    const asks = capacityAsks(req);
    const { res, leases } = this.decideAll(asks);
    return { response: answered(asks, leases, (j, i) => this.resourceResponse(res[j]!, leases[j]!, req.resource[i]!.resource_id)) };
  }

  getServerCapacity(req: M.GetServerCapacityRequest): M.GetServerCapacityResponse {
    const asks = serverCapacityAsks(req);
    const { res, leases } = this.decideAll(asks);
    return { response: answered(asks, leases, (j, i) => this.serverResourceResponse(res[j]!, leases[j]!, req.resource[i]!.resource_id)) };
  }

  /** Each resource of the request decided in turn; undefined for one past a bound (left out of the answer). */
  private decideAll(asks: Asks): { res: (Resource | undefined)[]; leases: (M.Lease | undefined)[] } {
    const refused = this.reserve(asks.decide.map((a) => a.id));
    const res = asks.decide.map((a) => (refused.has(a.id) ? undefined : this.resourceOf(a)));
    return { res, leases: asks.decide.map(({ ask }, i) => (res[i] === undefined ? undefined : this.decide(res[i], ask))) };
  }

  /** A GetCapacity answer for one resource (`sent`: its id as the request has it) once its lease is recorded. */
  resourceResponse(res: Resource, gets: M.Lease, sent: string): M.ResourceResponse {
    const count = res.store.count;
    return { resource_id: sent, gets, safe_capacity: res.template.safeCapacity ?? this.capacity(res) / (count > 0 ? count : 1) };
  }

  serverResourceResponse(res: Resource, gets: M.Lease, sent: string): M.ServerCapacityResourceResponse {
    const t = res.template;
    return { resource_id: sent, gets, algorithm: algorithmMessage(t.algorithm), safe_capacity: t.safeCapacity ?? 0 };
  }

  releaseCapacity(req: M.ReleaseCapacityRequest): M.ReleaseCapacityResponse {
    const client = idKey(req.client_id);
    for (const id of req.resource_id) {
      const res = this.resources.get(idKey(id));
      if (res !== undefined && res.store.get(client) !== undefined) {
        dropLease(res, client);
        this.leases--;
        this.dropIfEmpty(res);
      }
    }
    return {};
  }

  /** The resources that hold leases (for /capacity, metrics and the parent link). */
  list(): Iterable<Resource> {
    return this.resources.values();
  }

  /** How many resources are kept (each holds a lease, or is being decided). */
  get resourceCount(): number {
    return this.resources.size;
  }

  /** Drops expired leases of every resource, and the resources left without one (called every second). */
  cleanAll(): void {
    const now = this.options.clock.nowMs();
    for (const res of this.resources.values()) {
      this.clean(res, now);
      this.dropIfEmpty(res);
    }
  }

  /** The capacity a resource is shared out of right now. */
  capacity(res: Resource): number {
    return this.options.capacityOf?.(res.id, res.template) ?? res.template.capacity;
  }

  /** Whether the resource is in learning mode at `nowMs`. */
  learning(res: Resource, nowMs: number): boolean {
    const seconds = res.template.algorithm.learningModeDuration;
    return seconds > 0 && nowMs < (res.stateSinceMs ?? this.options.stateSinceMs) + seconds * 1000;
  }

  /** Reports a grant on `res` (both stores). */
  granted(res: Resource): void {
    this.options.observer?.onGrant?.(idText(res.id));
  }

  /** The resource of an id if it is kept here. */
  find(id: string): Resource | undefined {
    return this.resources.get(id);
  }

  /**
   * The resources of a request that cannot be kept: the new ones past CAPACITY_MAX_RESOURCES (those first in
   * the request get the room there is). Decided before anything of the request is.
   */
  reserve(ids: readonly string[]): ReadonlySet<string> {
    const max = this.options.maxResources ?? Infinity;
    if (this.resources.size + ids.length <= max) return NONE;
    const refused = new Set<string>();
    let room = max - this.resources.size;
    for (const id of ids) {
      if (this.resources.has(id)) continue;
      if (room > 0) room--;
      else refused.add(id);
    }
    return refused;
  }

  /** The resource of an ask with its template in force (matched to the id as sent). */
  resourceOf(a: ResourceAsk): Resource {
    return this.resource(a.id, a.id === a.sent ? undefined : a.sent);
  }

  /**
   * The resource of a key (ids.ts idKey) with its template in force, made on first use; templates match the id
   * as text (`sent`: the id itself when the key is its hash).
   */
  resource(id: string, sent?: string): Resource {
    const template = this.options.config().find(idText(sent ?? id));
    let res = this.resources.get(id);
    if (res === undefined) {
      res = new Resource(id, template);
      this.resources.set(id, res);
    } else if (res.template !== template) {
      res.template = template;
      syncBands(res);
    }
    return res;
  }

  /** Forgets a resource without a lease (nothing of it is kept: its next use starts it afresh). */
  dropIfEmpty(res: Resource): void {
    if (res.store.size > 0 || this.resources.get(res.id) !== res || this.holds?.(res.id) === true) return;
    this.resources.delete(res.id);
    this.onDrop?.(res.id);
  }

  private clean(res: Resource, now: number): void {
    const n = res.store.clean(now);
    if (n > 0) {
      res.bands?.clean(now);
      this.leases -= n;
      this.options.observer?.onExpired?.(idText(res.id), n);
    }
  }

  /** The lease `ask` gets on `res`, recorded; undefined for a new client past CAPACITY_MAX_LEASES. */
  private decide(res: Resource, ask: Ask): M.Lease | undefined {
    const now = this.options.clock.nowMs();
    this.clean(res, now);
    const client = ask.client;
    const old = res.store.get(client);
    if (old === undefined && this.leases >= (this.options.maxLeases ?? Infinity)) {
      this.dropIfEmpty(res);
      return undefined;
    }
    const lease = this.grant(res, ask, now);
    if (old === undefined) this.leases++;
    res.store.assign(client, lease);
    res.bands?.assign(client, old, lease);
    this.granted(res);
    return leaseMessage(lease);
  }

  /**
   * The lease `ask` gets on `res` (whose expired leases are already dropped) at `now`, not yet recorded: the
   * client's reported `has` in learning mode, else the resource's algorithm. Shared by the memory and the
   * Redis store (redis-capacity.ts), so both answer exactly alike.
   */
  grant(res: Resource, ask: Ask, now: number): StoredLease {
    const store = res.store;
    const algorithm = res.template.algorithm;
    const capacity = this.capacity(res);
    let has: number;
    if (this.learning(res, now)) has = ask.reportedHas ?? 0;
    else if (res.bands === undefined) {
      // As Doorman: every client of the resource in one share, whatever its priority.
      has = decideShare(algorithm.kind, capacity, store.view(ask.client), { client: ask.client, wants: ask.wants, subclients: ask.subclients });
    } else {
      // priority_bands: the algorithm runs in this client's band on what the higher bands leave, and never
      // grants more than is unallocated over all bands.
      const view = res.bands.band(ask.priority).view(ask.client);
      has = decideShare(algorithm.kind, res.bands.capacityFor(ask.priority, capacity), view, {
        client: ask.client,
        wants: ask.wants,
        subclients: ask.subclients,
      });
      if (res.bands.count > 1) has = Math.max(0, Math.min(has, capacity - store.sumHas + (store.get(ask.client)?.has ?? 0)));
    }
    // Whatever the inputs (a parent's capacity included), a grant is a finite number ≥ 0: nothing non-finite
    // ever enters the totals.
    if (!(has >= 0)) has = 0;
    else if (has > MAX_AMOUNT) has = MAX_AMOUNT;
    const expiryMs = now + algorithm.leaseLength * 1000;
    return { has, wants: ask.wants, subclients: ask.subclients, expiryMs, refreshInterval: algorithm.refreshInterval, priority: ask.priority };
  }
}

const NONE: ReadonlySet<string> = new Set();

/**
 * The entries of a request that were decided, answered by `make(j, i)` (j: the resource's decision, i: the
 * entry); those past a bound are left out. When none was decided: RESOURCE_EXHAUSTED.
 */
export function answered<T>(asks: Asks, leases: readonly (M.Lease | undefined)[], make: (j: number, i: number) => T): T[] {
  const out: T[] = [];
  for (let i = 0; i < asks.entry.length; i++) {
    const j = asks.entry[i]!;
    if (leases[j] !== undefined) out.push(make(j, i));
  }
  if (out.length === 0 && asks.entry.length > 0)
    throw new RequestTooLargeError('too many capacity resources or leases held (CAPACITY_MAX_RESOURCES, CAPACITY_MAX_LEASES); try again later');
  return out;
}

/** Takes a client's lease out of a resource (store and bands). */
export function dropLease(res: Resource, client: string): void {
  const lease = res.store.get(client);
  if (lease === undefined) return;
  res.store.release(client);
  res.bands?.release(client, lease.priority);
}

export function leaseMessage(lease: StoredLease): M.Lease {
  return { expiry_time: Math.floor(lease.expiryMs / 1000), refresh_interval: lease.refreshInterval, capacity: lease.has };
}
