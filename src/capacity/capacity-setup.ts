/**
 * The capacity service as the composition root starts it (CAPACITY_CONFIG): load the resource file (an invalid
 * one stops the start), serve decisions from memory or, with BACKEND=redis, from the state all replicas share
 * in Redis (redis-capacity.ts), hot-reload the file like the rules (the directory is
 * watched, so ConfigMap swaps are seen; a bad file keeps the last good one, logged and counted), drop expired
 * leases periodically, and, with CAPACITY_PARENT, take capacities from a parent server.
 */
import { dirname } from 'node:path';
import { watchConfigDir } from '../config/load/watcher.js';
import type { Clock } from '../vocab/clock.js';
import type { Logger } from '../observability/log.js';
import { StartupError } from '../vocab/startup-error.js';
import { CapacityServer, type CapacityObserver } from './capacity-server.js';
import type { CapacityConfig } from './config.js';
import { capacityStats, describeCapacity } from './describe-resources.js';
import { loadCapacityFile } from './load.js';
import { ParentLink } from './parent.js';
import { RedisCapacity } from './redis-capacity.js';
import { capacityRoutes, type BytesHandler } from './rpc.js';
import type { RedisClient } from '../storage/redis/connection.js';

export interface CapacitySettings {
  readonly capacityConfig: string;
  readonly capacityMaxLeases: number;
  readonly capacityMaxResources?: number;
  readonly capacityMaxRequestBytes?: number;
  readonly capacityParent: string;
  readonly capacityServerId: string;
  readonly workers: number;
  readonly backend: string;
  /** Prefix of the Redis keys (CACHE_KEY_PREFIX), for BACKEND=redis. */
  readonly cacheKeyPrefix: string;
  readonly configDebounceMs: number;
  readonly configPollIntervalMs: number;
  readonly configWatch: boolean;
  /** BACKEND=redis: longest a capacity call waits for Redis (then UNAVAILABLE). */
  readonly decisionMaxWaitMs?: number;
}

export interface CapacityReport {
  /** A reload finished: ok, or the errors that kept the last good file. */
  onReload?(ok: boolean): void;
  observer?: CapacityObserver;
  /** Called once with the per-resource state to export (read at scrape time). */
  watch?(stats: () => ReturnType<typeof capacityStats>): void;
  /** Called once with the number of resources kept (read at scrape time). */
  watchResources?(count: () => number): void;
  /** BACKEND=redis: called once with the Redis path's counters (read at scrape time). */
  watchRedis?(stats: () => { roundTrips: number; fullReads: number; retries: number; fellBack: number }): void;
}

export interface CapacitySetup {
  readonly server: CapacityServer;
  readonly routes: ReadonlyMap<string, BytesHandler>;
  config(): CapacityConfig;
  /** GET /capacity. */
  describe(): unknown;
  /** Sets the address Discovery answers (known once the gRPC port is bound). */
  setAddress(address: string): void;
  reload(): Promise<boolean>;
  close(): void;
}

/** How often idle resources are swept of expired leases. */
const CLEAN_INTERVAL_MS = 1000;

export interface CapacityDeps {
  clock: Clock;
  log: Logger;
  report?: CapacityReport;
  /** BACKEND=redis: the connection the leases are kept on (every replica on it shares one state). */
  redis?: RedisClient;
}

export async function setUpCapacity(settings: CapacitySettings, deps: CapacityDeps): Promise<CapacitySetup> {
  const file = settings.capacityConfig;
  const { clock, log } = deps;
  const redis = settings.backend === 'redis' ? deps.redis : undefined;
  if (settings.backend === 'redis' && redis === undefined)
    throw new StartupError('BACKEND=redis with CAPACITY_CONFIG needs a Redis connection for the capacity leases');
  // In memory, leases live in one process: workers behind one port would each grant the whole capacity.
  if (redis === undefined && settings.workers > 1)
    throw new StartupError('CAPACITY_CONFIG needs WORKERS=1 with BACKEND=memory: capacity leases are kept in the memory of one process (docs/capacity.md)');
  // Each replica would take its own lease from the parent and share it out of the one Redis state: over-grant.
  if (redis !== undefined && settings.capacityParent !== '')
    throw new StartupError(
      'CAPACITY_PARENT with BACKEND=redis is not supported yet: use BACKEND=memory for an intermediate capacity server (docs/capacity.md)',
    );
  const first = await loadCapacityFile(file);
  if (!first.ok) throw new StartupError(`capacity resource file ${file} is invalid`, first.errors.map(String));
  let current = first.config;
  let address = '';
  const parent = settings.capacityParent === '' ? undefined : new ParentLink(settings.capacityParent, () => settings.capacityServerId || address, clock, log);
  const server = new CapacityServer({
    clock,
    config: () => current,
    address: () => address,
    // The memory store's state is lost with the process: learning mode counts from this start. (On Redis each
    // resource's marker key says when its state began.)
    stateSinceMs: clock.nowMs(),
    maxLeases: settings.capacityMaxLeases,
    ...(settings.capacityMaxResources === undefined ? {} : { maxResources: settings.capacityMaxResources }),
    ...(parent === undefined ? {} : { capacityOf: (id: string) => parent.capacityOf(id) }),
    ...(deps.report?.observer === undefined ? {} : { observer: deps.report.observer }),
  });
  let lastText = JSON.stringify(current.templates);
  const reload = async (): Promise<boolean> => {
    const next = await loadCapacityFile(file);
    if (!next.ok) {
      log.error('capacity resource file reload failed; keeping the last good one', { file, errors: next.errors.map(String) });
      deps.report?.onReload?.(false);
      return false;
    }
    const text = JSON.stringify(next.config.templates);
    current = next.config;
    if (text !== lastText) log.info('capacity resource file reloaded', { file, templates: next.config.templates.length });
    lastText = text;
    deps.report?.onReload?.(true);
    return true;
  };
  const watcher = settings.configWatch
    ? watchConfigDir(dirname(file), {
        debounceMs: settings.configDebounceMs,
        pollIntervalMs: settings.configPollIntervalMs,
        onChange: () => void reload(),
        onError: (err: unknown) => log.warn('capacity file watcher error', { error: err }),
      })
    : undefined;
  deps.report?.watch?.(() => capacityStats(server, clock.nowMs()));
  deps.report?.watchResources?.(() => server.resourceCount);
  const sweep = setInterval(() => server.cleanAll(), CLEAN_INTERVAL_MS);
  sweep.unref();
  const onRedis =
    redis === undefined
      ? undefined
      : new RedisCapacity(server, {
          client: redis,
          prefix: settings.cacheKeyPrefix,
          clock,
          maxLeases: settings.capacityMaxLeases,
          ...(settings.decisionMaxWaitMs === undefined ? {} : { timeoutMs: settings.decisionMaxWaitMs }),
        });
  if (onRedis !== undefined) deps.report?.watchRedis?.(() => onRedis.stats());
  const routes = capacityRoutes(onRedis ?? server, settings.capacityMaxRequestBytes);
  return {
    server,
    routes,
    config: () => current,
    describe: () => ({ ...(describeCapacity(server, file, clock.nowMs()) as object), ...(parent === undefined ? {} : { parent: parent.describe() }) }),
    setAddress: (a) => {
      address = a;
      parent?.start(server);
    },
    reload,
    close: () => {
      clearInterval(sweep);
      watcher?.close();
      parent?.close();
    },
  };
}
