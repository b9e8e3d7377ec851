/**
 * The capacity client: the application's resources (top half) and the loop that keeps their leases (bottom half).
 *
 * The loop sends ONE GetCapacity for all resources (bulk refresh), each carrying its wants, priority and the lease
 * it holds (`has`, so a server that restarted learns the current split instead of handing capacity out twice),
 * every refresh interval — the smallest `refresh_interval` of the running leases — and at once when a resource
 * is added or asks for a new amount. Answers are matched by resource_id. A failed call moves to the next server
 * and is retried after an exponential backoff with jitter; meanwhile leases run out on their own expiry time and
 * each expired resource falls back to its mode (resource.ts), and is granted again when a server answers.
 */
import { hostname } from 'node:os';
import type * as grpc from '@grpc/grpc-js';
import { Connection } from './server-connection.js';
import { CapacityError } from './capacity-error.js';
import { RateLimiter, type LimiterOptions } from './limiter.js';
import { Resource, type ResourceOptions, type ResourceOwner } from './resource.js';
import { systemTime, type ClientTime } from './time.js';

export interface BackoffOptions {
  /** First retry delay, in ms. Default 250. */
  readonly initialMs?: number;
  /** Longest retry delay, in ms. Default 30,000. */
  readonly maxMs?: number;
}

export interface CapacityClientOptions {
  /** host:port of the capacity server(s), tried in order after failures. */
  readonly servers: string | readonly string[];
  /** Names this client to the server; one lease per (client, resource). Default host:pid:random. */
  readonly clientId?: string;
  readonly time?: ClientTime;
  readonly credentials?: grpc.ChannelCredentials;
  /** Deadline of each call, in ms. Default 5,000. */
  readonly rpcTimeoutMs?: number;
  /** Mastership redirects followed in one call. Default 3. */
  readonly maxRedirects?: number;
  /** Refresh interval while no lease is held (first grant not yet received), in ms. Default 5,000. */
  readonly idleRefreshMs?: number;
  readonly backoff?: BackoffOptions;
  /** Random numbers in [0, 1) for the jitter (injectable for tests). */
  readonly random?: () => number;
  /** Called at the start of each refresh, before the request is built (e.g. to set wants from observed demand). */
  readonly beforeRefresh?: (nowMs: number) => void;
  /** Told about each failed refresh or release (the client retries on its own). */
  readonly onError?: (error: CapacityError) => void;
}

export class CapacityClient {
  readonly clientId: string;
  private readonly time: ClientTime;
  private readonly connection: Connection;
  private readonly resources = new Map<string, Resource>();
  private readonly owner: ResourceOwner;
  private readonly idleRefreshMs: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly random: () => number;
  private readonly onError: (error: CapacityError) => void;
  private readonly beforeRefresh: ((nowMs: number) => void) | undefined;
  private nextRefreshMs = 0;
  private failures = 0;
  private wake = new AbortController();
  private closed = false;
  private readonly loop: Promise<void>;
  /** Refreshes that got an answer; failed ones (for tests and metrics). */
  refreshes = 0;
  failedRefreshes = 0;

  constructor(options: CapacityClientOptions) {
    const servers = typeof options.servers === 'string' ? [options.servers] : [...options.servers];
    this.clientId = options.clientId ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 10)}`;
    this.time = options.time ?? systemTime;
    this.connection = new Connection({
      servers,
      rpcTimeoutMs: options.rpcTimeoutMs ?? 5_000,
      maxRedirects: options.maxRedirects ?? 3,
      ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    });
    this.idleRefreshMs = options.idleRefreshMs ?? 5_000;
    this.backoffInitialMs = options.backoff?.initialMs ?? 250;
    this.backoffMaxMs = options.backoff?.maxMs ?? 30_000;
    this.random = options.random ?? Math.random;
    this.onError = options.onError ?? (() => undefined);
    this.beforeRefresh = options.beforeRefresh;
    this.owner = {
      nowMs: () => this.time.nowMs(),
      asked: () => this.refreshSoon(),
      release: (resource) => this.releaseResource(resource),
    };
    this.loop = this.run();
  }

  /** The server calls currently go to (the master, once a redirect was followed). */
  get serverAddress(): string {
    return this.connection.address;
  }

  /** Starts holding a share of `id`; one Resource per id (asking again for a held id is an error). */
  resource(id: string, wants: number, options: ResourceOptions = {}): Resource {
    if (this.closed) throw new CapacityError('CLIENT_CLOSED', 'capacity client closed');
    if (this.resources.has(id)) throw new RangeError(`resource ${JSON.stringify(id)} is already held by this client`);
    const resource = new Resource(id, wants, options, this.owner);
    this.resources.set(id, resource);
    this.refreshSoon();
    return resource;
  }

  /** A QPS limiter fed by `resource`'s capacity, on this client's clock. */
  limiter(resource: Resource, options?: LimiterOptions): RateLimiter {
    return new RateLimiter(resource, this.time, options);
  }

  /** Releases every resource (best effort) and stops the loop. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true; // from here releaseResource sends nothing: one bulk release below
    const held = [...this.resources.values()];
    if (held.length > 0) await this.release(held.map((r) => r.id)).catch(() => undefined);
    for (const r of held) await r.release();
    this.wake.abort();
    await this.loop;
    this.connection.close();
  }

  private refreshSoon(): void {
    if (this.failures > 0) return; // backing off: a new wants goes with the next retry
    this.nextRefreshMs = 0;
    this.wake.abort();
  }

  private async releaseResource(resource: Resource): Promise<void> {
    if (this.resources.get(resource.id) !== resource) return;
    this.resources.delete(resource.id);
    if (!this.closed) await this.release([resource.id]).catch(() => undefined);
  }

  private async release(ids: string[]): Promise<void> {
    try {
      await this.connection.releaseCapacity(this.clientId, ids);
    } catch (error) {
      this.onError(asCapacityError(error));
      throw error;
    }
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      let now = this.time.nowMs();
      for (const r of this.resources.values()) r.expireIfDue(now);
      if (now >= this.nextRefreshMs && this.resources.size > 0) {
        await this.refresh();
        now = this.time.nowMs();
        for (const r of this.resources.values()) r.expireIfDue(now);
      }
      if (this.closed) break;
      let until = this.resources.size > 0 ? this.nextRefreshMs : Number.POSITIVE_INFINITY;
      for (const r of this.resources.values()) if (r.lease !== undefined) until = Math.min(until, r.lease.expiryMs);
      if (this.wake.signal.aborted) this.wake = new AbortController();
      // No resources: sleep until one is added (resource() wakes the loop); bounded hourly re-check.
      const ms = Number.isFinite(until) ? Math.max(1, until - now) : 3_600_000;
      await this.time.sleep(ms, this.wake.signal).catch(() => undefined);
    }
  }

  /** One bulk GetCapacity for all resources; schedules the next one (refresh interval, or backoff on failure). */
  private async refresh(): Promise<void> {
    this.beforeRefresh?.(this.time.nowMs());
    const held = [...this.resources.values()];
    const sentAt = this.time.nowMs();
    try {
      const answer = await this.connection.getCapacity({ client_id: this.clientId, resource: held.map((r) => r.toWire(sentAt)) });
      const now = this.time.nowMs();
      for (const entry of answer.response ?? []) {
        const resource = this.resources.get(entry.resource_id);
        if (resource !== undefined && entry.gets) resource.applyGrant(entry.gets, entry.safe_capacity, now);
      }
      this.failures = 0;
      this.refreshes++;
      let interval = Number.POSITIVE_INFINITY;
      for (const r of this.resources.values()) if (r.lease !== undefined) interval = Math.min(interval, r.lease.refreshIntervalMs);
      this.nextRefreshMs = now + (Number.isFinite(interval) ? interval : this.idleRefreshMs);
    } catch (error) {
      this.failures++;
      this.failedRefreshes++;
      this.connection.failOver();
      this.nextRefreshMs = this.time.nowMs() + this.backoffMs();
      this.onError(asCapacityError(error));
    }
  }

  /** Exponential backoff with equal jitter: half the delay fixed, half random, so clients spread out. */
  private backoffMs(): number {
    const exp = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** Math.min(30, this.failures - 1));
    return exp / 2 + (exp / 2) * this.random();
  }
}

function asCapacityError(error: unknown): CapacityError {
  return error instanceof CapacityError ? error : new CapacityError('CAPACITY_UNAVAILABLE', String(error), { cause: error });
}
