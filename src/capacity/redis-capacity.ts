/**
 * The capacity service on Redis (BACKEND=redis): every replica decides on one state per resource kept in Redis,
 * so each answers as master and replicas never grant more than the capacity between them.
 *
 * A decision is optimistic: bring this replica's copy of the resource's leases up to date (redis-lease-cache.ts:
 * the changes since its version, O(1) when it wrote last), decide with the SAME code as the memory store
 * (CapacityServer.grant, O(log n)), and commit with a version check (commit.lua). On a conflict (another replica
 * wrote in between) synchronise and decide again, at most MAX_ATTEMPTS times with a little jitter; if it still
 * conflicts the client is answered the lease it already holds (or 0), which never over-grants.
 *
 * Decisions on one resource run one after another in a replica (so only replicas conflict), each bounded by
 * `timeoutMs` from its arrival: a call that cannot be decided in time (Redis paused or slow) fails with
 * UNAVAILABLE instead of queueing behind the stalled one; a Redis error is UNAVAILABLE too. Nothing is granted
 * that Redis does not hold.
 *
 * Learning mode counts from the resource's marker key: set when the state began (first use, or after Redis
 * lost it: a flush, a failover to an empty replica), so a replica restart keeps the state and no learning.
 */
import type { Clock } from '../core/clock.js';
import { RateLimitError, RequestTooLargeError, StoreError } from '../core/errors.js';
import type { RedisClient } from '../storage/redis/connection.js';
import { capacityAsks, leaseMessage, serverCapacityAsks, checkClientId, type Ask, type CapacityServer, type Resource } from './capacity-server.js';
import type * as M from './messages.js';
import { RedisLeaseCache } from './redis-lease-cache.js';

export { packLease, unpackLease } from './redis-lease-cache.js';

const MAX_ATTEMPTS = 5;
const MAX_JITTER_MS = 5;
/** Default bound on one call's decisions when none is configured (DECISION_MAX_WAIT_MS in the service). */
const DEFAULT_TIMEOUT_MS = 10_000;

export interface RedisCapacityOptions {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly clock: Clock;
  /** Most leases per resource in Redis (CAPACITY_MAX_LEASES); past it new clients are refused. */
  readonly maxLeases?: number;
  /** Longest a call waits for its decisions (queue and Redis), in real milliseconds; then UNAVAILABLE. */
  readonly timeoutMs?: number;
  /** Changes Redis logs per resource for replicas to catch up with (tests shorten it). */
  readonly logLength?: number;
  /** Waits between attempts (injected so tests need not sleep). */
  readonly sleep?: (ms: number) => Promise<void>;
}

export class RedisCapacity {
  readonly cache: RedisLeaseCache;
  /** Decisions that still conflicted after MAX_ATTEMPTS (answered the client's current lease). */
  conflicts = 0;
  /** Decisions synchronised and made again because another replica wrote first. */
  retries = 0;
  /** Per resource, the tail of this replica's decisions: they run one after another, so only other replicas conflict. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly server: CapacityServer,
    private readonly options: RedisCapacityOptions,
  ) {
    this.cache = new RedisLeaseCache(options.client, options.prefix, options.logLength);
  }

  /** Every replica on one Redis answers for the same state: each is a master. */
  discovery(): M.DiscoveryResponse {
    return this.server.discovery();
  }

  async getCapacity(req: M.GetCapacityRequest): Promise<M.GetCapacityResponse> {
    const deadline = this.deadline();
    const response: M.ResourceResponse[] = [];
    for (const { id, ask } of capacityAsks(req)) {
      const res = this.server.resource(id);
      response.push(this.server.resourceResponse(res, await this.queued(res, deadline, () => this.decide(res, ask))));
    }
    return { response };
  }

  async getServerCapacity(req: M.GetServerCapacityRequest): Promise<M.GetServerCapacityResponse> {
    const deadline = this.deadline();
    const response: M.ServerCapacityResourceResponse[] = [];
    for (const { id, ask } of serverCapacityAsks(req)) {
      const res = this.server.resource(id);
      response.push(this.server.serverResourceResponse(res, await this.queued(res, deadline, () => this.decide(res, ask))));
    }
    return { response };
  }

  async releaseCapacity(req: M.ReleaseCapacityRequest): Promise<M.ReleaseCapacityResponse> {
    checkClientId(req.client_id);
    const deadline = this.deadline();
    for (const id of req.resource_id) {
      const res = this.server.resource(id);
      await this.queued(res, deadline, () => this.release(res, req.client_id));
    }
    return {};
  }

  private deadline(): number {
    return performance.now() + (this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }

  /**
   * Runs `work` after this replica's earlier work on the resource, answering by `deadline` (performance.now()
   * ms) at the latest. Work whose turn comes after its deadline is skipped; work that is running when the
   * deadline passes finishes in the background (bounded by the Redis command timeout) and is then seen by the
   * next decision through the log, but its caller has its UNAVAILABLE already.
   */
  private queued<T>(res: Resource, deadline: number, work: () => Promise<T>): Promise<T> {
    const late = (): StoreError => new StoreError('STORE_TIMEOUT', `capacity state of ${res.id} in Redis: no answer within ${this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`);
    const turn = (): Promise<T> => (performance.now() >= deadline ? Promise.reject(late()) : work());
    const next = (this.queues.get(res.id) ?? Promise.resolve()).then(turn, turn);
    this.queues.set(res.id, next);
    const done = (): void => {
      if (this.queues.get(res.id) === next) this.queues.delete(res.id);
    };
    next.then(done, done);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(late()), Math.max(0, deadline - performance.now()));
      next.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(unavailable(res.id, err));
        },
      );
    });
  }

  private async decide(res: Resource, ask: Ask): Promise<M.Lease> {
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.nowMs();
      await this.cache.refresh(res, now);
      const old = res.store.get(ask.client);
      if (old === undefined && res.store.size >= (this.options.maxLeases ?? Infinity)) throw new RequestTooLargeError('too many leases held on this resource; try again later');
      const lease = this.server.grant(res, ask, now);
      if (await this.cache.commit(res, ask.client, lease, now)) {
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

  /** Drops the client's lease; a client without one costs a synchronisation and no write. */
  private async release(res: Resource, client: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.nowMs();
      await this.cache.refresh(res, now);
      if (res.store.get(client) === undefined) return;
      // The last attempt writes whatever the state: dropping a lease never over-grants.
      if (await this.cache.commit(res, client, undefined, now, attempt >= MAX_ATTEMPTS)) return;
      this.retries++;
      await (this.options.sleep ?? delay)(Math.random() * MAX_JITTER_MS * attempt);
    }
  }
}

/** Our own errors pass; anything else is Redis failing (refused, closed, timed out): UNAVAILABLE, named. */
function unavailable(resource: string, err: unknown): Error {
  if (err instanceof RateLimitError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StoreError('STORE_UNAVAILABLE', `capacity state of ${resource} in Redis unavailable: ${message}`, { cause: err });
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
