/**
 * The capacity service on Redis (BACKEND=redis): every replica reads and writes one state per resource, so
 * each answers as master and replicas never grant more than the capacity between them.
 *
 * A decision is optimistic: read the resource's leases, version and marker in one script (read.lua), rebuild
 * the in-memory view (LeaseStore, bands, index) from them, decide with the SAME code as the memory store
 * (CapacityServer.grant), and write with commit.lua only if the version is still the one read. On a conflict
 * (another replica wrote in between) read and decide again, at most MAX_ATTEMPTS times with a little jitter;
 * if it still conflicts the client is answered the lease it already holds (or 0), which never over-grants.
 *
 * Cost: O(n log n) per decision in the leases of the resource (the hash is read whole and the index rebuilt),
 * where the memory store is O(log n); docs/capacity.md says so.
 *
 * Learning mode counts from the resource's marker key: set when the state began (first use, or after Redis
 * lost it: a flush, a failover to an empty replica), so a replica restart keeps the state and no learning.
 */
import { readFileSync } from 'node:fs';
import { capacityKeys } from '../core/keys.js';
import type { Clock } from '../core/clock.js';
import { RequestTooLargeError } from '../core/errors.js';
import { BatchCommands, type BatchScript } from '../storage/redis/batch-script.js';
import type { RedisClient } from '../storage/redis/connection.js';
import { capacityAsks, leaseMessage, serverCapacityAsks, checkClientId, type Ask, type CapacityServer, type Resource } from './capacity-server.js';
import { LeaseStore, type StoredLease } from './lease-store.js';
import type * as M from './messages.js';
import { PriorityBands } from './priority-bands.js';

const LUA_DIR = new URL('../storage/redis/lua/capacity/', import.meta.url);
const MAX_ATTEMPTS = 5;
const MAX_JITTER_MS = 5;

function script(name: string): BatchScript {
  return { lua: readFileSync(new URL(name, LUA_DIR), 'utf8'), algorithms: [] };
}

/** "has wants subclients priority expiryMs refreshInterval": numbers as JavaScript prints them (exact for doubles). */
export function packLease(l: StoredLease): string {
  return `${l.has} ${l.wants} ${l.subclients} ${l.priority} ${l.expiryMs} ${l.refreshInterval}`;
}

export function unpackLease(text: string): StoredLease | undefined {
  const p = text.split(' ').map(Number);
  if (p.length !== 6 || !p.every(Number.isFinite)) return undefined;
  return { has: p[0]!, wants: p[1]!, subclients: p[2]!, priority: p[3]!, expiryMs: p[4]!, refreshInterval: p[5]! };
}

export interface RedisCapacityOptions {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly clock: Clock;
  /** Most leases per resource in Redis (CAPACITY_MAX_LEASES); past it new clients are refused. */
  readonly maxLeases?: number;
  /** Waits between attempts (injected so tests need not sleep). */
  readonly sleep?: (ms: number) => Promise<void>;
}

interface Snapshot {
  readonly token: string;
  readonly expired: string[];
}

export class RedisCapacity {
  private readonly read: BatchCommands;
  private readonly commit: BatchCommands;
  /** Decisions that still conflicted after MAX_ATTEMPTS (answered the client's current lease). */
  conflicts = 0;
  /** Decisions read and made again because another decision wrote first. */
  retries = 0;
  /** Per resource, the tail of this replica's decisions: they run one after another, so only other replicas conflict. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly server: CapacityServer,
    private readonly options: RedisCapacityOptions,
  ) {
    this.read = new BatchCommands(options.client, script('read.lua'));
    this.commit = new BatchCommands(options.client, script('commit.lua'));
  }

  /** Every replica on one Redis answers for the same state: each is a master. */
  discovery(): M.DiscoveryResponse {
    return this.server.discovery();
  }

  async getCapacity(req: M.GetCapacityRequest): Promise<M.GetCapacityResponse> {
    const response: M.ResourceResponse[] = [];
    for (const { id, ask } of capacityAsks(req)) {
      const res = this.server.resource(id);
      response.push(this.server.resourceResponse(res, await this.decide(res, ask)));
    }
    return { response };
  }

  async getServerCapacity(req: M.GetServerCapacityRequest): Promise<M.GetServerCapacityResponse> {
    const response: M.ServerCapacityResourceResponse[] = [];
    for (const { id, ask } of serverCapacityAsks(req)) {
      const res = this.server.resource(id);
      response.push(this.server.serverResourceResponse(res, await this.decide(res, ask)));
    }
    return { response };
  }

  async releaseCapacity(req: M.ReleaseCapacityRequest): Promise<M.ReleaseCapacityResponse> {
    checkClientId(req.client_id);
    for (const id of req.resource_id) {
      const k = capacityKeys(this.options.prefix, id);
      await this.commit.call(3, [k.leases, k.version, k.since, '', req.client_id, '', 1]);
      const res = this.server.find(id);
      if (res !== undefined) this.forget(res, req.client_id);
    }
    return {};
  }

  private forget(res: Resource, client: string): void {
    const lease = res.store.get(client);
    if (lease === undefined) return;
    res.store.release(client);
    res.bands.release(client, lease.priority);
  }

  /** Reads the resource into `res` (its store and bands replaced by what Redis holds, expired leases left out). */
  private async load(res: Resource, now: number): Promise<Snapshot> {
    const k = capacityKeys(this.options.prefix, res.id);
    const reply = await this.read.call(3, [k.leases, k.version, k.since, now]);
    if (!Array.isArray(reply) || reply.length < 2 || reply.length % 2 !== 0) throw new Error(`unexpected capacity read reply for ${res.id}`);
    const items = reply as string[];
    const store = new LeaseStore();
    const bands = new PriorityBands();
    const expired: string[] = [];
    for (let i = 2; i < items.length; i += 2) {
      const client = String(items[i]);
      const lease = unpackLease(String(items[i + 1]));
      // Unreadable entries are dropped like expired ones (they cannot be honoured).
      if (lease === undefined || lease.expiryMs < now) expired.push(client);
      else {
        store.assign(client, lease);
        bands.assign(client, undefined, lease);
      }
    }
    res.store = store;
    res.bands = bands;
    res.stateSinceMs = Number(items[0]);
    return { token: `${String(items[0])}:${String(items[1])}`, expired };
  }

  /**
   * One decision at a time per resource in this replica: concurrent ones would each read the same version and
   * all but one fail their commit (measured: 40 concurrent clients on two replicas exhausted the retries on
   * 60% of decisions without this; conflicts are then only between replicas).
   */
  private decide(res: Resource, ask: Ask): Promise<M.Lease> {
    const prev = this.queues.get(res.id) ?? Promise.resolve();
    const next = prev.then(
      () => this.decideNow(res, ask),
      () => this.decideNow(res, ask),
    );
    this.queues.set(res.id, next);
    const done = (): void => {
      if (this.queues.get(res.id) === next) this.queues.delete(res.id);
    };
    next.then(done, done);
    return next;
  }

  private async decideNow(res: Resource, ask: Ask): Promise<M.Lease> {
    const k = capacityKeys(this.options.prefix, res.id);
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.nowMs();
      const snap = await this.load(res, now);
      const old = res.store.get(ask.client);
      if (old === undefined && res.store.size >= (this.options.maxLeases ?? Infinity)) throw new RequestTooLargeError('too many leases held on this resource; try again later');
      const lease = this.server.grant(res, ask, now);
      // The hash lives until its last lease expires (plus a second), then an idle resource costs nothing.
      let last = lease.expiryMs;
      res.store.forEach((_, l) => (last = Math.max(last, l.expiryMs)));
      const keepMs = Math.ceil(last - now) + 1000;
      const written = await this.commit.call(3, [k.leases, k.version, k.since, snap.token, ask.client, packLease(lease), keepMs, ...snap.expired]);
      if (written === 1) {
        res.store.assign(ask.client, lease);
        res.bands.assign(ask.client, old, lease);
        this.server.granted(res);
        return leaseMessage(lease);
      }
      if (attempt >= MAX_ATTEMPTS) {
        // Still contended: answer what the client holds (it is counted in Redis), never a new grant.
        this.conflicts++;
        return old === undefined ? { expiry_time: Math.floor(now / 1000), refresh_interval: res.template.algorithm.refreshInterval, capacity: 0 } : leaseMessage(old);
      }
      this.retries++;
      await (this.options.sleep ?? delay)(Math.random() * MAX_JITTER_MS * attempt);
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
