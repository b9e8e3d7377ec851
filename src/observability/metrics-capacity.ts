/**
 * The capacity service's metrics (src/capacity/): reloads of its resource file, grants and expiries per
 * resource, each resource's state read at scrape time, and its work on Redis. Resource ids come from requests,
 * so at most MAX_CAPACITY_SERIES of them become label values; the rest are counted under `other`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { PendingCounts, type PendingSeries } from './metrics-pending.js';
import { scrapedCounter } from './metrics-scraped.js';

/** One capacity resource as the metrics see it. */
export interface CapacityResourceStats {
  readonly resource: string;
  readonly capacity: number;
  readonly granted: number;
  readonly wanted: number;
  readonly clients: number;
  readonly learning: boolean;
}

export interface CapacityMetrics {
  /** The capacity service's reports (src/capacity/capacity-setup.ts): reloads, grants and expiries per resource. */
  capacityReport(): {
    onReload(ok: boolean): void;
    observer: { onGrant(resource: string): void; onExpired(resource: string, n: number): void };
    watchResources(count: () => number): void;
  };
  /** Exports the capacity service's per-resource state, read at scrape time. */
  watchCapacity(resources: () => Iterable<CapacityResourceStats>): void;
  /** Exports the capacity service's work on Redis (BACKEND=redis, src/capacity/redis-capacity.ts). */
  watchCapacityRedis(stats: () => { roundTrips: number; fullReads: number; retries: number; fellBack: number }): void;
}

/** Most resource ids kept as label values (ids come from requests); the rest are counted under `other`. */
const MAX_CAPACITY_SERIES = 1000;

export function capacityMetrics(registers: Registry[]): CapacityMetrics {
  const reloads = new Counter({
    name: 'ratelimit_capacity_config_reloads_total',
    help: 'Reloads of the capacity resource file (CAPACITY_CONFIG); a failure keeps the last good file.',
    labelNames: ['result'] as const,
    registers,
  });
  // A grant is counted on every GetCapacity: added to a number here and handed to prom-client when read
  // (metrics-pending.ts), not hashed from a label object per call.
  const flush = { grants: () => {} };
  const grants = new Counter({
    name: 'ratelimit_capacity_refreshes_total',
    help: 'Capacity leases granted or refreshed, per resource (ids past the first 1,000 counted as `other`).',
    labelNames: ['resource'] as const,
    registers,
    collect: () => flush.grants(),
  });
  const expiries = new Counter({
    name: 'ratelimit_capacity_expired_leases_total',
    help: 'Capacity leases dropped because their holder did not refresh them in time, per resource.',
    labelNames: ['resource'] as const,
    registers,
  });
  const grantCounts = new PendingCounts<'resource'>([grants]);
  flush.grants = grantCounts.flush;

  return {
    capacityReport() {
      // The first MAX_CAPACITY_SERIES resources get a series each; later ones share `other`.
      const series = new Map<string, PendingSeries<'resource'>>();
      let other: PendingSeries<'resource'> | undefined;
      const seriesOf = (resource: string): PendingSeries<'resource'> => {
        let s = series.get(resource);
        if (s === undefined) {
          if (series.size < MAX_CAPACITY_SERIES) series.set(resource, (s = grantCounts.series({ resource })));
          else s = other ??= grantCounts.series({ resource: 'other' });
        }
        return s;
      };
      return {
        onReload: (ok) => reloads.inc({ result: ok ? 'success' : 'failure' }),
        watchResources: (count) => {
          new Gauge({
            name: 'ratelimit_capacity_resources',
            help: 'Capacity resources kept by this process (those holding a lease); bounded by CAPACITY_MAX_RESOURCES.',
            registers,
            collect() {
              this.set(count());
            },
          });
        },
        observer: {
          onGrant: (resource) => grantCounts.add(seriesOf(resource), 0, 1),
          onExpired: (resource, n) => expiries.inc({ resource: seriesOf(resource).labels.resource }, n),
        },
      };
    },
    watchCapacity(resources) {
      const gauge = (name: string, help: string, pick: (r: CapacityResourceStats) => number) =>
        new Gauge({
          name,
          help,
          labelNames: ['resource'] as const,
          registers,
          collect() {
            this.reset();
            let n = 0;
            for (const r of resources()) if (n++ < MAX_CAPACITY_SERIES) this.set({ resource: r.resource }, pick(r));
          },
        });
      gauge('ratelimit_capacity_capacity', "Capacity of a resource of the capacity service (the template's, or the parent's grant).", (r) => r.capacity);
      gauge('ratelimit_capacity_granted', 'Sum of the capacity granted to the clients of a resource (leases in force).', (r) => r.granted);
      gauge('ratelimit_capacity_wanted', 'Sum of what the clients of a resource want.', (r) => r.wanted);
      gauge('ratelimit_capacity_clients', 'Clients (subclients counted) holding a lease on a resource.', (r) => r.clients);
      gauge('ratelimit_capacity_learning_mode', '1 while a resource is in learning mode (echoing what clients report they have).', (r) => (r.learning ? 1 : 0));
    },
    watchCapacityRedis(stats) {
      scrapedCounter(
        registers,
        'ratelimit_capacity_redis_round_trips_total',
        'Calls to Redis of the capacity service (one per batch of decisions on a resource, BACKEND=redis).',
        () => stats().roundTrips,
      );
      scrapedCounter(
        registers,
        'ratelimit_capacity_redis_full_reads_total',
        "Times this replica read a resource's whole lease state from Redis (first use, after a flush, or too far behind the change log).",
        () => stats().fullReads,
      );
      scrapedCounter(
        registers,
        'ratelimit_capacity_redis_retries_total',
        'Batches of capacity decisions made again because another replica wrote first.',
        () => stats().retries,
      );
      scrapedCounter(
        registers,
        'ratelimit_capacity_redis_fallbacks_total',
        'Capacity asks answered the lease already held (or 0) because the resource stayed contended for 8 attempts.',
        () => stats().fellBack,
      );
    },
  };
}
