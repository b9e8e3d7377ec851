/**
 * The counter store's metrics, read from the store at scrape time: the Redis store's own counters, the
 * over-limit cache, the in-memory store and the quota leases. Each is exported once the store asks for it.
 */
import { Counter, type Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './metrics-scraped.js';

export interface StoreMetrics {
  /** Exports the Redis store's own counters (requests, script calls, round trips...). */
  watchRedis(
    stats: () => {
      requests: number;
      scriptCalls: number;
      roundTrips: number;
      crossSlotRequests: number;
      failures: number;
      expiredCalls: number;
      lateCommits: number;
    },
  ): void;
  /** Exports the over-limit cache's hit count and size. */
  watchOverLimitCache(stats: () => { hits: number; entries: number }): void;
  /** Exports the memory store's size, its protected (over-limit) keys, evictions and unstored decisions. */
  watchMemory(stats: () => { keys: number; bytes: number; protectedKeys: number; expired: number; evicted: number; unstored: number }): void;
  /** Exports the quota leases' counters (src/lease/). */
  watchLeases(stats: () => { claims: number; leased: number; returned: number; unused: number; held: number }): void;
}

export function storeMetrics(registers: Registry[]): StoreMetrics {
  return {
    watchRedis(stats) {
      // Counters kept by the store itself, read at scrape time.
      const counter = (name: string, help: string, pick: (s: ReturnType<typeof stats>) => number) => scrapedCounter(registers, name, help, () => pick(stats()));
      counter('ratelimit_redis_requests_total', 'Requests that needed Redis.', (s) => s.requests);
      counter('ratelimit_redis_script_calls_total', 'Batch script calls sent (one per request; per slot on Cluster).', (s) => s.scriptCalls);
      counter(
        'ratelimit_redis_round_trips_total',
        'Pipelines written to Redis (network round trips); below requests when concurrent requests share one.',
        (s) => s.roundTrips,
      );
      counter(
        'ratelimit_redis_cross_slot_requests_total',
        'Requests whose limits spanned several Cluster slots (best effort across slots).',
        (s) => s.crossSlotRequests,
      );
      counter('ratelimit_redis_failures_total', 'Requests Redis could not answer (then FAILURE_MODE decides).', (s) => s.failures);
      counter(
        'ratelimit_redis_expired_calls_total',
        'Script calls that reached Redis after the caller gave up, so did nothing (not counted).',
        (s) => s.expiredCalls,
      );
      counter(
        'ratelimit_redis_late_commits_total',
        'Requests counted in Redis after the caller had given up and answered by FAILURE_MODE (should stay 0).',
        (s) => s.lateCommits,
      );
    },
    watchLeases(stats) {
      scrapedCounter(
        registers,
        'ratelimit_lease_claims_total',
        'Lease claims sent to Redis (one per burst on a key, not one per request).',
        () => stats().claims,
      );
      scrapedCounter(registers, 'ratelimit_lease_units_leased_total', 'Units claimed for leases (counted in Redis at the claim).', () => stats().leased);
      scrapedCounter(
        registers,
        'ratelimit_lease_units_returned_total',
        'Unused leased units given back into the window (or bucket) they came from.',
        () => stats().returned,
      );
      scrapedCounter(
        registers,
        'ratelimit_lease_units_unused_total',
        'Leased units neither admitted nor given back (window over, bucket refilled, give-back failed): the under-admission.',
        () => stats().unused,
      );
      scrapedGauge(registers, 'ratelimit_lease_keys', 'Counter keys this replica holds a lease on.', () => stats().held);
    },
    watchOverLimitCache(stats) {
      scrapedCounter(
        registers,
        'ratelimit_over_limit_cache_hits_total',
        'Requests answered from the local over-limit cache without Redis.',
        () => stats().hits,
      );
      scrapedGauge(registers, 'ratelimit_over_limit_cache_entries', 'Keys currently known to be over their limit.', () => stats().entries);
    },
    watchMemory(stats) {
      const gauge = (name: string, help: string, pick: (s: ReturnType<typeof stats>) => number) => scrapedGauge(registers, name, help, () => pick(stats()));
      gauge('ratelimit_memory_keys', 'Keys held by the in-memory store.', (s) => s.keys);
      gauge('ratelimit_memory_bytes', 'Accounted bytes of the in-memory store (bounded by MEMORY_MAX_BYTES).', (s) => s.bytes);
      gauge('ratelimit_memory_protected_keys', 'Keys with no quota left, which eviction spares while other keys remain.', (s) => s.protectedKeys);
      new Counter({
        name: 'ratelimit_memory_evictions_total',
        help: 'Entries freed to make room or on expiry: reason expired (dead entries) or lru (live keys with quota left).',
        labelNames: ['reason'] as const,
        registers,
        collect() {
          const s = stats();
          this.reset();
          this.inc({ reason: 'expired' }, s.expired);
          this.inc({ reason: 'lru' }, s.evicted);
        },
      });
      scrapedCounter(
        registers,
        'ratelimit_memory_unstored_total',
        'New keys decided but not stored because every stored key was over its limit and memory was full.',
        () => stats().unstored,
      );
    },
  };
}
