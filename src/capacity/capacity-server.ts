/**
 * The capacity service's decisions, protocol-free: the four RPCs of doorman.Capacity over plain objects
 * (messages.ts), on in-memory lease stores, with an injected clock. Per request and resource: drop expired
 * leases, then either echo the client's reported `has` (learning mode, right after state was lost) or run the
 * resource's algorithm, record the lease and answer it. As Doorman: one resource per (template, id), created
 * on first use; templates re-read on every decision so a reload applies at once.
 */
import type { Clock } from '../core/clock.js';
import { InvalidRequestError, RequestTooLargeError } from '../core/errors.js';
import { decideShare } from './algorithms.js';
import type { CapacityConfig, ResourceTemplate } from './config.js';
import { LeaseStore, type StoredLease } from './lease-store.js';
import { PriorityBands } from './priority-bands.js';
import type * as M from './messages.js';
import { algorithmMessage } from './messages.js';

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
}

export class Resource {
  /** Every lease of the resource: the totals answered and exported, expiry, the global cap. */
  store = new LeaseStore();
  /** The same leases by priority band (priority-bands.ts). */
  bands = new PriorityBands();
  /** When this resource's state began (Redis store: the marker key's time); undefined: the server's. */
  stateSinceMs: number | undefined;
  constructor(
    readonly id: string,
    public template: ResourceTemplate,
  ) {}
}

const MAX_WANTS = Number.MAX_SAFE_INTEGER;

function checkWants(wants: number, what: string): void {
  if (!Number.isFinite(wants) || wants < 0 || wants > MAX_WANTS) throw new InvalidRequestError(`${what}: wants must be a finite number ≥ 0, not ${wants}`);
}

function checkId(id: string, what: string): void {
  if (id === '' || id.length > 1024) throw new InvalidRequestError(`${what} must be 1 to 1024 characters`);
}

export class CapacityServer {
  private readonly resources = new Map<string, Resource>();
  private leases = 0;

  constructor(private readonly options: CapacityServerOptions) {}

  discovery(): M.DiscoveryResponse {
    return { mastership: { master_address: this.options.address() }, is_master: true };
  }

  getCapacity(req: M.GetCapacityRequest): M.GetCapacityResponse {
    return {
      response: capacityAsks(req).map(({ id, ask }) => {
        const res = this.resource(id);
        return this.resourceResponse(res, this.decide(res, ask));
      }),
    };
  }

  getServerCapacity(req: M.GetServerCapacityRequest): M.GetServerCapacityResponse {
    return {
      response: serverCapacityAsks(req).map(({ id, ask }) => {
        const res = this.resource(id);
        return this.serverResourceResponse(res, this.decide(res, ask));
      }),
    };
  }

  /** A GetCapacity answer for one resource once its lease is recorded (the safe capacity counts it). */
  resourceResponse(res: Resource, gets: M.Lease): M.ResourceResponse {
    return { resource_id: res.id, gets, safe_capacity: res.template.safeCapacity ?? this.capacity(res) / res.store.count };
  }

  serverResourceResponse(res: Resource, gets: M.Lease): M.ServerCapacityResourceResponse {
    const t = res.template;
    return { resource_id: res.id, gets, algorithm: algorithmMessage(t.algorithm), safe_capacity: t.safeCapacity ?? 0 };
  }

  releaseCapacity(req: M.ReleaseCapacityRequest): M.ReleaseCapacityResponse {
    checkId(req.client_id, 'client_id');
    for (const id of req.resource_id) {
      const res = this.resources.get(id);
      const lease = res?.store.get(req.client_id);
      if (res !== undefined && lease !== undefined) {
        res.store.release(req.client_id);
        res.bands.release(req.client_id, lease.priority);
        this.leases--;
      }
    }
    return {};
  }

  /** The resources created so far (for /capacity, metrics and the parent link). */
  list(): Iterable<Resource> {
    return this.resources.values();
  }

  /** Drops expired leases of every resource (called periodically, so idle resources do not hold memory). */
  cleanAll(): void {
    const now = this.options.clock.nowMs();
    for (const res of this.resources.values()) this.clean(res, now);
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
    this.options.observer?.onGrant?.(res.id);
  }

  /** The resource of an id if it was used here. */
  find(id: string): Resource | undefined {
    return this.resources.get(id);
  }

  /** The resource of an id with its template in force, made on first use. */
  resource(id: string): Resource {
    const template = this.options.config().find(id);
    let res = this.resources.get(id);
    if (res === undefined) {
      res = new Resource(id, template);
      this.resources.set(id, res);
    } else res.template = template;
    return res;
  }

  private clean(res: Resource, now: number): void {
    const n = res.store.clean(now);
    if (n > 0) res.bands.clean(now);
    if (n > 0) {
      this.leases -= n;
      this.options.observer?.onExpired?.(res.id, n);
    }
  }

  private decide(res: Resource, ask: Ask): M.Lease {
    const now = this.options.clock.nowMs();
    this.clean(res, now);
    const client = ask.client;
    const old = res.store.get(client);
    if (old === undefined && this.leases >= (this.options.maxLeases ?? Infinity)) throw new RequestTooLargeError('too many leases held; try again later');
    const lease = this.grant(res, ask, now);
    if (old === undefined) this.leases++;
    res.store.assign(client, lease);
    res.bands.assign(client, old, lease);
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
    const old = store.get(ask.client);
    const capacity = this.capacity(res);
    let has: number;
    if (this.learning(res, now)) has = Math.max(0, ask.reportedHas ?? 0);
    else {
      // The algorithm runs in this client's priority band on what the higher bands leave; with one band that
      // is the whole resource. Never more than is unallocated over all bands.
      const view = res.bands.band(ask.priority).view(ask.client);
      has = decideShare(algorithm.kind, res.bands.capacityFor(ask.priority, capacity), view, { client: ask.client, wants: ask.wants, subclients: ask.subclients });
      // With several bands, a sharing kind is also capped by what is unallocated over all of them. (With one
      // band that cap is the algorithm's own; NO_ALGORITHM and STATIC never look at it, in Doorman either.)
      const sharing = algorithm.kind !== 'NO_ALGORITHM' && algorithm.kind !== 'STATIC';
      if (sharing && res.bands.count > 1) has = Math.max(0, Math.min(has, capacity - store.sumHas + (old?.has ?? 0)));
    }
    const expiryMs = now + algorithm.leaseLength * 1000;
    return { has, wants: ask.wants, subclients: ask.subclients, expiryMs, refreshInterval: algorithm.refreshInterval, priority: ask.priority };
  }
}

/** One client's request for one resource, as both GetCapacity and GetServerCapacity come down to it. */
export interface Ask {
  readonly client: string;
  readonly wants: number;
  readonly subclients: number;
  readonly reportedHas: number | undefined;
  readonly priority: number;
}

/** The asks of a GetCapacity request, validated (each resource once per request, in order). */
export function capacityAsks(req: M.GetCapacityRequest): { id: string; ask: Ask }[] {
  checkId(req.client_id, 'client_id');
  return req.resource.map((r) => {
    checkId(r.resource_id, 'resource_id');
    checkWants(r.wants, r.resource_id);
    return { id: r.resource_id, ask: { client: req.client_id, wants: r.wants, subclients: 1, reportedHas: r.has?.capacity, priority: r.priority } };
  });
}

/** The asks of a GetServerCapacity request: each resource's wants summed over the priority bands. */
export function serverCapacityAsks(req: M.GetServerCapacityRequest): { id: string; ask: Ask }[] {
  checkId(req.server_id, 'server_id');
  return req.resource.map((r) => {
    checkId(r.resource_id, 'resource_id');
    let wants = 0;
    let subclients = 0;
    let priority = 0;
    for (const band of r.wants) {
      checkWants(band.wants, r.resource_id);
      wants += band.wants;
      subclients += Math.max(0, Math.trunc(band.num_clients));
      priority = Math.max(priority, band.priority);
    }
    // A server with no clients still holds a lease; it counts as one subclient so shares stay finite.
    return { id: r.resource_id, ask: { client: req.server_id, wants, subclients: Math.max(1, subclients), reportedHas: r.has?.capacity, priority } };
  });
}

export function checkClientId(id: string): void {
  checkId(id, 'client_id');
}

export function leaseMessage(lease: StoredLease): M.Lease {
  return { expiry_time: Math.floor(lease.expiryMs / 1000), refresh_interval: lease.refreshInterval, capacity: lease.has };
}
