/**
 * The capacity service on Redis (BACKEND=redis): every replica decides on one state per resource kept in Redis,
 * so each answers as master and replicas never grant more than the capacity between them.
 *
 * Decisions are optimistic and batched per resource: the asks (and releases) waiting for a resource in this
 * replica are decided one after another on the replica's copy of its leases (redis-lease-cache.ts), with the
 * SAME code as the memory store (CapacityServer.grant, O(log n) each), and written in one round trip that
 * checks the copy's version (exchange.lua). If another replica wrote in between, nothing is written, the copy
 * catches up from the changes that come back, and the batch is decided again, at most MAX_ATTEMPTS times with
 * a little jitter; then asks are answered the lease the client already holds (or 0), which never over-grants.
 * One replica alone thus costs one Redis call per batch and never reads its own writes back.
 *
 * Each call is bounded by `timeoutMs` from its arrival (DECISION_MAX_WAIT_MS): one that cannot be decided in
 * time (Redis paused or slow) fails with UNAVAILABLE instead of waiting behind the stalled batch; a Redis error
 * is UNAVAILABLE too. Nothing is granted that Redis does not hold.
 *
 * Learning mode counts from the resource's marker key: set when the state began (first use, or after Redis
 * lost it: a flush, a failover to an empty replica), so a replica restart keeps the state and no learning.
 */
import type { Clock } from '../vocab/clock.js';
import { RateLimitError, StoreError } from '../vocab/errors.js';
import type { RedisClient } from '../storage/redis/connection.js';
import { capacityAsks, serverCapacityAsks, type Ask, type Asks } from './asks.js';
import { answered, leaseMessage, type CapacityServer, type Resource } from './capacity-server.js';
import { idKey } from './ids.js';
import type * as M from './doorman-messages.js';
import { RedisLeaseCache, setLease, takeBack, type Changed } from './redis-lease-cache.js';

export { packLease, unpackLease } from './redis-lease-cache.js';

const MAX_ATTEMPTS = 8;
const MAX_JITTER_MS = 5;
/** Most decisions written in one round trip (bounds the script's arguments and its time in Redis). */
const MAX_BATCH = 128;
/** Most resources of one request decided at once (the rest wait for them: see `together`). */
const MAX_TOGETHER = 64;
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

/** One caller's answer from a batch decided on the copy. */
interface Answer {
  readonly lease?: M.Lease;
  readonly error?: unknown;
  readonly granted?: boolean;
}

/**
 * One ask (or release: `ask` undefined) waiting for its resource's next batch, answered once: by its batch, or
 * with UNAVAILABLE by the resource's watchdog when its deadline passes first.
 */
class Pending {
  settled = false;
  constructor(
    readonly client: string,
    readonly ask: Ask | undefined,
    readonly deadline: number,
    private readonly resource: string,
    private readonly resolve: (lease: M.Lease | undefined) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  done(lease: M.Lease | undefined, error?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    if (error === undefined) this.resolve(lease);
    else this.reject(unavailable(this.resource, error));
  }
}

export class RedisCapacity {
  readonly cache: RedisLeaseCache;
  /** Decisions that still conflicted after MAX_ATTEMPTS (answered the client's current lease). */
  conflicts = 0;
  /** Batches decided again because another replica wrote first. */
  retries = 0;
  /** Per resource, the asks waiting for the batch after the one in flight. */
  private readonly waiting = new Map<string, Pending[]>();

  constructor(
    private readonly server: CapacityServer,
    private readonly options: RedisCapacityOptions,
  ) {
    this.cache = new RedisLeaseCache(options.client, options.prefix, options.logLength);
    // A resource left without a lease is dropped by the server (its sweep, a release) unless asks for it are
    // queued here; its copy goes with it.
    server.holds = (id) => this.waiting.has(id);
    server.onDrop = (id) => this.cache.forget(id);
  }

  /** The counters /metrics exports (ratelimit_capacity_redis_*). */
  stats(): { roundTrips: number; fullReads: number; retries: number; fellBack: number } {
    return { roundTrips: this.cache.stats.exchanges, fullReads: this.cache.stats.fullReads, retries: this.retries, fellBack: this.conflicts };
  }

  /** Every replica on one Redis answers for the same state: each is a master. */
  discovery(): M.DiscoveryResponse {
    return this.server.discovery();
  }

  async getCapacity(req: M.GetCapacityRequest): Promise<M.GetCapacityResponse> {
    const asks = capacityAsks(req);
    const { res, leases } = await this.decideAll(asks);
    return { response: answered(asks, leases, (j, i) => this.server.resourceResponse(res[j]!, leases[j]!, req.resource[i]!.resource_id)) };
  }

  async getServerCapacity(req: M.GetServerCapacityRequest): Promise<M.GetServerCapacityResponse> {
    const asks = serverCapacityAsks(req);
    const { res, leases } = await this.decideAll(asks);
    return { response: answered(asks, leases, (j, i) => this.server.serverResourceResponse(res[j]!, leases[j]!, req.resource[i]!.resource_id)) };
  }

  async releaseCapacity(req: M.ReleaseCapacityRequest): Promise<M.ReleaseCapacityResponse> {
    const deadline = this.deadline();
    const client = idKey(req.client_id);
    await together(req.resource_id, (id) => this.enqueue({ id: idKey(id), sent: id }, client, undefined, deadline));
    return {};
  }

  /** Each resource of a request decided once (asks.ts); the Resource each was decided on comes back with it. */
  private async decideAll(asks: Asks): Promise<{ res: Resource[]; leases: (M.Lease | undefined)[] }> {
    const deadline = this.deadline();
    const refused = this.server.reserve(asks.decide.map((a) => a.id));
    const res: Resource[] = [];
    const leases = await together(asks.decide, (a, i) =>
      refused.has(a.id) ? Promise.resolve(undefined) : this.enqueue(a, a.ask.client, a.ask, deadline, (r) => (res[i] = r)),
    );
    return { res, leases };
  }

  private deadline(): number {
    return performance.now() + (this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }

  private late(res: Resource): StoreError {
    return new StoreError('STORE_TIMEOUT', `capacity state of ${res.id} in Redis: no answer within ${this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`);
  }

  /**
   * Joins the resource's next batch and answers by `deadline` (performance.now() ms) at the latest: a batch
   * still in Redis when it passes finishes in the background (bounded by the Redis command timeout), and the
   * next decision sees its writes through the log, but this caller has its UNAVAILABLE already.
   */
  private enqueue(
    which: { id: string; sent: string },
    client: string,
    ask: Ask | undefined,
    deadline: number,
    onResource?: (res: Resource) => void,
  ): Promise<M.Lease | undefined> {
    // The Resource is looked up now, not when the request arrived: a resource dropped meanwhile (its last
    // lease gone) is made afresh, and one with asks queued is never dropped (server.holds).
    const res = this.server.resource(which.id, which.id === which.sent ? undefined : which.sent);
    onResource?.(res);
    return new Promise((resolve, reject) => {
      const pending = new Pending(client, ask, deadline, res.id, resolve, reject);
      const queue = this.waiting.get(res.id);
      if (queue !== undefined) queue.push(pending);
      else {
        // No batch in flight: this ask waits for the rest of this turn of the event loop, so that the asks
        // read from the sockets with it share its round trip (sent at once, it went alone, and a round trip
        // costs the service far more than an ask decided on the copy).
        this.waiting.set(res.id, [pending]);
        setImmediate(() => void this.drain(res));
      }
    });
  }

  /** Decides batches on the resource until none waits; the map entry marks a batch waiting or in flight. */
  private async drain(res: Resource): Promise<void> {
    for (;;) {
      const now = performance.now();
      const live: Pending[] = [];
      for (const p of this.waiting.get(res.id)!) {
        if (p.deadline <= now) p.done(undefined, this.late(res));
        else if (!p.settled) live.push(p);
      }
      if (live.length === 0) {
        this.waiting.delete(res.id);
        this.server.dropIfEmpty(res);
        return;
      }
      const batch = live.length > MAX_BATCH ? live.splice(0, MAX_BATCH) : live;
      this.waiting.set(res.id, batch === live ? [] : live);
      const watchdog = this.watch(res, batch);
      try {
        await this.decideBatch(res, batch);
      } catch (error) {
        for (const p of batch) p.done(undefined, error);
      } finally {
        watchdog.stop();
      }
    }
  }

  /**
   * One timer per resource, not one per ask: while `batch` is in Redis, answers UNAVAILABLE each ask of it or
   * of the queue behind it as its deadline passes. It wakes at the earliest deadline waiting, and at the latest
   * one bound (timeoutMs) from now, by which any ask that joins the queue later is due at the soonest.
   */
  private watch(res: Resource, batch: readonly Pending[]): { stop(): void } {
    const bound = this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    let timer: NodeJS.Timeout;
    const arm = (): void => {
      const now = performance.now();
      let at = now + bound;
      for (const p of batch) if (!p.settled && p.deadline < at) at = p.deadline;
      for (const p of this.waiting.get(res.id) ?? []) if (!p.settled && p.deadline < at) at = p.deadline;
      timer = setTimeout(expire, at - now);
    };
    const expire = (): void => {
      const now = performance.now();
      for (const p of batch) if (p.deadline <= now) p.done(undefined, this.late(res));
      for (const p of this.waiting.get(res.id) ?? []) if (p.deadline <= now) p.done(undefined, this.late(res));
      arm();
    };
    arm();
    return { stop: () => clearTimeout(timer) };
  }

  private async decideBatch(res: Resource, batch: Pending[]): Promise<void> {
    if (!this.cache.has(res.id)) await this.cache.refresh(res, this.options.clock.nowMs());
    for (let attempt = 1; ; attempt++) {
      const now = this.options.clock.nowMs();
      res.store.clean(now);
      res.bands?.clean(now);
      const last = attempt >= MAX_ATTEMPTS;
      const changed: Changed = new Map();
      let answers: Answer[];
      try {
        answers = this.decideOnCopy(res, batch, now, last, changed);
      } catch (error) {
        // The copy must hold only what Redis holds: take back what this batch put in before failing.
        takeBack(res, changed);
        throw error;
      }
      // The last attempt writes only releases, whatever the state: dropping a lease never over-grants.
      if (changed.size === 0 || (await this.cache.exchange(res, now, changed, last))) {
        for (let i = 0; i < batch.length; i++) {
          const a = answers[i]!;
          if (a.granted === true) this.server.granted(res);
          batch[i]!.done(a.lease, a.error);
        }
        return;
      }
      this.retries++;
      await (this.options.sleep ?? delay)(Math.random() * MAX_JITTER_MS * attempt);
    }
  }

  /**
   * Decides `batch` in order on the copy, putting each grant (or release) into it and noting in `changed` the
   * lease each touched client held before; the answers in the batch's order.
   */
  private decideOnCopy(res: Resource, batch: Pending[], now: number, last: boolean, changed: Changed): Answer[] {
    const answers: Answer[] = [];
    for (const p of batch) {
      const old = res.store.get(p.client);
      if (p.ask === undefined) {
        // Sent even when the copy has no lease for the client: the copy may be behind (Redis drops nothing
        // then, and bumps no version).
        answers.push(RELEASED);
        if (!changed.has(p.client)) changed.set(p.client, old);
        setLease(res, p.client, undefined);
      } else if (last) {
        // Still contended: the asks get what they hold (it is counted in Redis), never a new grant.
        answers.push({
          lease:
            old === undefined
              ? { expiry_time: Math.floor(now / 1000), refresh_interval: res.template.algorithm.refreshInterval, capacity: 0 }
              : leaseMessage(old),
        });
        this.conflicts++;
      } else if (old === undefined && res.store.size >= (this.options.maxLeases ?? Infinity)) {
        // Past CAPACITY_MAX_LEASES: left out of the answer (asks.ts answered).
        answers.push(RELEASED);
      } else {
        const lease = this.server.grant(res, p.ask, now);
        if (!changed.has(p.client)) changed.set(p.client, old);
        setLease(res, p.client, lease);
        answers.push({ lease: leaseMessage(lease), granted: true });
      }
    }
    return answers;
  }
}

const RELEASED: Answer = {};

/** Our own errors pass; anything else is Redis failing (refused, closed, timed out): UNAVAILABLE, named. */
function unavailable(resource: string, err: unknown): Error {
  if (err instanceof RateLimitError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new StoreError('STORE_UNAVAILABLE', `capacity state of ${resource} in Redis unavailable: ${message}`, { cause: err });
}

/**
 * The resources of one request are decided together, MAX_TOGETHER at a time: each has its own state and batch,
 * so their order does not change the answers, and waiting for one round trip after another would; the bound
 * keeps a request naming thousands of resources from holding thousands of calls in flight.
 */
async function together<T, R>(items: readonly T[], decide: (item: T, i: number) => Promise<R>): Promise<R[]> {
  if (items.length <= MAX_TOGETHER) return Promise.all(items.map(decide));
  const out: R[] = [];
  for (let i = 0; i < items.length; i += MAX_TOGETHER) out.push(...(await Promise.all(items.slice(i, i + MAX_TOGETHER).map((x, k) => decide(x, i + k)))));
  return out;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
