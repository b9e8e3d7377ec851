/**
 * Builds the counter store the settings ask for. Part of the composition root: the only place that
 * knows which concrete stores exist.
 *  - memory: the embedded MemoryStore.
 *  - memcached: MemcachedStore (app/memcached-factory.ts), behind the same over-limit cache and failure-mode guard.
 *  - redis:  RedisStore, behind the local over-limit cache (LOCAL_CACHE_SIZE > 0), behind the failure-mode
 *            guard (FAILURE_MODE open | closed | local; local decides with a MemoryStore at limit ÷ EXPECTED_REPLICAS),
 *            behind the quota leases (src/lease/: limits with `lease:` decide from units leased to this replica).
 */
import type { Clock } from '../vocab/clock.js';
import { counterKey } from '../vocab/keys.js';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';
import type { Settings } from '../settings/settings.js';
import type { CounterStore } from '../storage/counter-store.js';
import { MemoryStore } from '../storage/memory/memory-store.js';
import { OverLimitCache } from '../storage/over-limit-cache.js';
import { parseHostPorts } from '../storage/redis/options.js';
import { redactUrl } from '../vocab/redact.js';
import { createRedisStore, type RedisStore, type RedisStoreOptions } from '../storage/redis/redis-store.js';
import { ResilientStore } from '../storage/resilient.js';
import { LeaseManager } from '../lease/lease-manager.js';
import { LeaseStore } from '../lease/lease-store.js';
import { RedisLeaseBackend } from '../lease/redis-backend.js';
import { StartupError } from '../vocab/startup-error.js';
import { throttledLog } from '../storage/throttled-log.js';
import type { SrvResolver } from '../storage/memcached/srv.js';
import { buildMemcachedStore } from './memcached-factory.js';
import { perSecondRedisOptions } from './per-second-redis.js';
import { PerSecondSplitStore } from '../storage/per-second/per-second-store.js';

export function redisOptions(settings: Settings, clock: Clock, log: Logger): RedisStoreOptions {
  const tls = {
    ...(settings.redisTlsCa ? { caFile: settings.redisTlsCa } : {}),
    ...(settings.redisTlsCert ? { certFile: settings.redisTlsCert } : {}),
    ...(settings.redisTlsKey ? { keyFile: settings.redisTlsKey } : {}),
    ...(settings.redisTlsServername ? { servername: settings.redisTlsServername } : {}),
    ...(settings.redisTlsInsecure ? { insecureSkipVerify: true } : {}),
    ...(settings.redisTlsSkipHostnameVerification ? { skipHostnameVerification: true } : {}),
  };
  return {
    url: settings.redisUrl,
    type: settings.redisType,
    sentinelMaster: settings.redisSentinelMaster,
    ...(settings.redisSentinelAddrs.length > 0 ? { sentinels: parseHostPorts(settings.redisSentinelAddrs.join(','), 26379) } : {}),
    ...(settings.redisSentinelPassword ? { sentinelPassword: settings.redisSentinelPassword } : {}),
    ...(settings.redisClusterNodes.length > 0 ? { clusterNodes: parseHostPorts(settings.redisClusterNodes.join(',')) } : {}),
    ...(Object.keys(tls).length > 0 ? { tls } : {}),
    connectTimeoutMs: settings.redisConnectTimeoutMs,
    expiryJitterMaxS: settings.expirationJitterMaxSeconds,
    // The client's command timeout is only a backstop for a reply that never comes: every decision has its
    // own deadline (the caller's, up to DECISION_MAX_WAIT_MS, or REDIS_COMMAND_TIMEOUT_MS without one), enforced
    // by the stores with expiry in Redis. A command timeout below a caller's deadline would drop healthy
    // answers the caller still waits for and answer them by FAILURE_MODE.
    commandTimeoutMs: Math.max(settings.decisionMaxWaitMs, settings.redisCommandTimeoutMs) + 1000,
    probeTimeoutMs: settings.redisCommandTimeoutMs,
    clock,
    log: (message, error) => log.warn(message, error === undefined ? undefined : { error: describeError(error) }),
    logInfo: (message) => log.info(message),
    // Every 5 s while Redis cannot decide, at error level, naming the cause (WRONGPASS, NOPERM, ...).
    logError: (message) => log.error(message, { failureMode: settings.failureMode }),
    // Evaluated (never written) by the health probe; under the key prefix, as ACL key patterns expect.
    probeKey: counterKey(settings.cacheKeyPrefix, 'ratelimit-health-probe', [], 'fixed_window', 1000),
  };
}

/** `onRedis`: told the RedisStore under the counter store (BACKEND=redis), whose connection others may share. */
export async function buildStore(
  settings: Settings,
  deps: { clock: Clock; log: Logger; metrics: Metrics; onRedis?: (redis: RedisStore) => void; resolveSrv?: SrvResolver },
): Promise<CounterStore> {
  const { clock, log, metrics } = deps;
  if (settings.backend === 'memory') {
    const memory = new MemoryStore({ maxKeys: settings.memoryMaxKeys, maxBytes: settings.memoryMaxBytes });
    metrics.watchMemory(() => memory.stats());
    return memory;
  }

  if (settings.backend === 'memcached') {
    return guarded(
      await buildMemcachedStore(settings, { clock, log, ...(deps.resolveSrv ? { resolveSrv: deps.resolveSrv } : {}) }),
      'memcached',
      settings,
      deps,
    );
  }

  let redis;
  try {
    redis = createRedisStore(redisOptions(settings, clock, log));
  } catch (err) {
    throw new StartupError(`Redis settings are invalid: ${(err as Error).message}`);
  }
  metrics.watchRedis(() => redis.stats());
  deps.onRedis?.(redis);
  // REDIS_STARTUP: background waits only the connect timeout; wait and fail wait REDIS_STARTUP_TIMEOUT_MS,
  // then fail exits with the cause. Otherwise the failure mode answers and the cause is logged every 5 s.
  const waitMs = settings.redisStartup === 'background' ? settings.redisConnectTimeoutMs : settings.redisStartupTimeoutMs;
  const where = { url: redactUrl(settings.redisUrl), type: settings.redisType };
  try {
    await redis.waitUntilReady(waitMs);
    log.info('connected to Redis', where);
  } catch (err) {
    const cause = describeError(err);
    if (settings.redisStartup === 'fail') {
      await redis.close();
      throw new StartupError(`Redis cannot decide (REDIS_STARTUP=fail): ${cause}`);
    }
    log.error(`Redis cannot decide yet; answering by FAILURE_MODE=${settings.failureMode} until it can`, { ...where, error: cause });
  }

  const resilient = guarded(redis, 'Redis', settings, deps);
  // Quota leases (rules with `lease:`) sit outside the failure-mode guard: a valid lease keeps deciding
  // while Redis is unreachable; the checks it cannot decide take the ordinary path above.
  const leaseLog = throttledLog({ log: (message, error) => log.warn(message, { error: describeError(error) }), clock, intervalMs: 10_000 });
  const manager = new LeaseManager({ backend: new RedisLeaseBackend(redis), clock, log: leaseLog });
  metrics.watchLeases(() => manager.stats());
  const main = new LeaseStore(resilient, manager, { clock });
  if (!settings.redisPerSecond) return main;
  // REDIS_PERSECOND: one-second limits in a Redis of their own, behind a guard of its own, so that either
  // Redis failing leaves the limits of the other deciding.
  let perSecond: RedisStore;
  let perSecondUrl: string;
  try {
    const options = perSecondRedisOptions(settings, redisOptions(settings, clock, log));
    perSecondUrl = options.url;
    perSecond = createRedisStore(options);
  } catch (err) {
    if (err instanceof StartupError) throw err;
    throw new StartupError(`per-second Redis settings are invalid: ${(err as Error).message}`);
  }
  try {
    await perSecond.waitUntilReady(settings.redisConnectTimeoutMs);
    log.info('connected to the per-second Redis', { url: redactUrl(perSecondUrl), type: settings.redisPerSecondType });
  } catch (err) {
    log.error(`the per-second Redis cannot decide yet; its limits answered by FAILURE_MODE=${settings.failureMode} until it can`, {
      error: describeError(err),
    });
  }
  return new PerSecondSplitStore(main, guarded(perSecond, 'per-second Redis', settings, deps));
}

/** The over-limit caches whose metrics a Metrics registry already exports. */
const overLimitCaches = new WeakMap<Metrics, OverLimitCache[]>();

/**
 * A remote store behind the local over-limit cache (LOCAL_CACHE_SIZE > 0) and the failure-mode guard
 * (FAILURE_MODE open | closed | local; local decides with a MemoryStore at limit ÷ EXPECTED_REPLICAS).
 */
function guarded(store: CounterStore, name: string, settings: Settings, deps: { clock: Clock; log: Logger; metrics: Metrics }): CounterStore {
  const { clock, log, metrics } = deps;
  let primary: CounterStore = store;
  if (settings.localCacheSize > 0) {
    const cache = new OverLimitCache(store, { maxEntries: settings.localCacheSize });
    // One set of cache metrics for every cache of this process (two with REDIS_PERSECOND): the sums.
    let caches = overLimitCaches.get(metrics);
    if (caches === undefined) {
      const all: OverLimitCache[] = [];
      caches = all;
      overLimitCaches.set(metrics, all);
      metrics.watchOverLimitCache(() =>
        all.reduce((sum, c) => ({ hits: sum.hits + c.stats().hits, entries: sum.entries + c.stats().entries }), { hits: 0, entries: 0 }),
      );
    }
    caches.push(cache);
    primary = cache;
  }
  const fallbackLog = throttledLog({ log: (message, error) => log.warn(message, { error: describeError(error) }), clock, intervalMs: 10_000 });
  return new ResilientStore(primary, {
    mode: settings.failureMode,
    expectedReplicas: settings.expectedReplicas,
    clock,
    timeoutMarginMs: 1,
    noDeadlineTimeoutMs: settings.redisCommandTimeoutMs,
    // RedisStore.apply (and the over-limit cache around it) settles by the deadline it is given; the memcached
    // store is raced here.
    primaryKeepsDeadline: name !== 'memcached',
    ...(settings.failureMode === 'local' ? { local: new MemoryStore({ maxKeys: settings.memoryMaxKeys, maxBytes: settings.memoryMaxBytes }) } : {}),
    onFallback: (mode, reason, error) => {
      metrics.storeFallbacks.inc({ mode });
      // the reference's error types: a Redis error is redis_error, any other (memcached's) service_error
      metrics.reference?.onShouldRateLimitError(name === 'memcached' ? 'service_error' : 'redis_error');
      fallbackLog(`${name} could not answer (${reason}); deciding by FAILURE_MODE=${mode}`, error);
    },
  });
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === 'string' ? error : JSON.stringify(error);
}
