/**
 * CAPACITY_PARENT: this server as an intermediate in a Doorman tree. Every refresh it sends its parent (ours or
 * Doorman) one GetServerCapacity for all its resources, each with its clients' wants summed per priority band
 * and the lease it holds, and uses each grant as that resource's capacity. When a lease from the parent
 * expires unrenewed (the parent is gone), the capacity falls to the parent's last safe_capacity, or 0.
 * Refreshes come at the shortest refresh_interval the parent answered (1 s until it has answered), and back off
 * to at most 10 s while the parent cannot be reached. A resource seen for the first time is asked for at once.
 */
import * as grpc from '@grpc/grpc-js';
import type { Clock } from '../vocab/clock.js';
import type { Logger } from '../observability/log.js';
import type { CapacityServer } from './capacity-server.js';
import { idText } from './ids.js';
import { doormanDefinition } from './doorman-messages.js';
import type * as M from './doorman-messages.js';

interface ParentLease {
  capacity: number;
  expiryMs: number;
  refreshInterval: number;
  safeCapacity: number | undefined;
  expiryTime: number;
}

const MAX_BACKOFF_MS = 10_000;
const CALL_TIMEOUT_MS = 5_000;

export class ParentLink {
  private readonly leases = new Map<string, ParentLease>();
  private readonly client: grpc.Client & Record<string, unknown>;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;
  private again = false;
  private failures = 0;
  private closed = false;
  private server: CapacityServer | undefined;

  constructor(
    private readonly address: string,
    private readonly serverId: () => string,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    const Ctor = (grpc.loadPackageDefinition(doormanDefinition()) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } }).doorman.Capacity;
    this.client = new Ctor(address, grpc.credentials.createInsecure());
  }

  start(server: CapacityServer): void {
    this.server = server;
    this.schedule(0);
  }

  /** The capacity of a resource now: the parent's grant while its lease holds, else its safe capacity, else 0. */
  capacityOf(id: string): number {
    const lease = this.leases.get(id);
    if (lease === undefined) {
      this.refreshSoon();
      return 0;
    }
    return this.clock.nowMs() <= lease.expiryMs ? lease.capacity : (lease.safeCapacity ?? 0);
  }

  /** What /capacity shows of the link. */
  describe(): unknown {
    return { parent: this.address, failures: this.failures, leases: Object.fromEntries([...this.leases].map(([id, l]) => [id, { ...l }])) };
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.client.close();
  }

  private refreshSoon(): void {
    if (this.inFlight) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh(), ms);
    this.timer.unref();
  }

  private request(): M.GetServerCapacityRequest {
    const resource: M.ServerCapacityResourceRequest[] = [];
    for (const res of this.server?.list() ?? []) {
      // The link sends ids as text: one that is not UTF-8, or keyed by its hash (over 1,024 bytes), is not
      // asked for, and its capacity stays 0.
      if (idText(res.id) !== res.id) continue;
      // One walk per resource per refresh (not per request): the bands of its clients by priority.
      const bands = new Map<number, { num_clients: number; wants: number }>();
      res.store.forEach((_, lease) => {
        const b = bands.get(lease.priority) ?? { num_clients: 0, wants: 0 };
        b.num_clients += lease.subclients;
        b.wants += lease.wants;
        bands.set(lease.priority, b);
      });
      const held = this.leases.get(res.id);
      resource.push({
        resource_id: res.id,
        ...(held === undefined ? {} : { has: { expiry_time: held.expiryTime, refresh_interval: held.refreshInterval, capacity: held.capacity } }),
        wants: [...bands].map(([priority, b]) => ({ priority, num_clients: b.num_clients, wants: b.wants })),
      });
    }
    return { server_id: this.serverId(), resource };
  }

  private async refresh(): Promise<void> {
    if (this.closed || this.server === undefined) return;
    this.inFlight = true;
    let next = Infinity;
    try {
      const req = this.request();
      if (req.resource.length > 0) {
        const res = await new Promise<M.GetServerCapacityResponse>((resolve, reject) => {
          const fn = this.client['GetServerCapacity'] as (r: unknown, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, v: unknown) => void) => void;
          fn.call(this.client, req, { deadline: Date.now() + CALL_TIMEOUT_MS }, (e, v) => (e ? reject(e) : resolve(v as M.GetServerCapacityResponse)));
        });
        const now = this.clock.nowMs();
        // Leases of resources no longer asked for (dropped here) are forgotten once expired: bounded memory.
        const asked = new Set(req.resource.map((r) => r.resource_id));
        for (const [id, l] of this.leases) if (!asked.has(id) && l.expiryMs < now) this.leases.delete(id);
        for (const r of res.response) {
          this.leases.set(r.resource_id, {
            capacity: r.gets.capacity,
            // The parent's expiry is in its time; our clock decides when the lease ran out, from its length.
            expiryMs: now + Math.max(0, r.gets.expiry_time * 1000 - Date.now()),
            expiryTime: r.gets.expiry_time,
            refreshInterval: r.gets.refresh_interval,
            safeCapacity: r.safe_capacity,
          });
          next = Math.min(next, Math.max(1, r.gets.refresh_interval) * 1000);
        }
        if (res.response.length === 0 && res.mastership?.master_address)
          this.log.warn('capacity parent is not the master', { parent: this.address, master: res.mastership.master_address });
      }
      if (!Number.isFinite(next)) next = 1000;
      this.failures = 0;
    } catch (err) {
      this.failures++;
      next = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(this.failures, 5));
      if (this.failures === 1 || this.failures % 10 === 0)
        this.log.warn('capacity parent unreachable; leases run out at their expiry', { parent: this.address, failures: this.failures, error: err });
    } finally {
      this.inFlight = false;
    }
    if (this.again) {
      this.again = false;
      next = 0;
    }
    this.schedule(next);
  }
}
