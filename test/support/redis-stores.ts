/**
 * RedisStores on freshly started servers, for the store suites: one per deployment shape (standalone,
 * Sentinel, Cluster). Each handle stops its servers; the caller closes the store.
 */
import { createRedisStore, type RedisStore, type RedisStoreOptions } from '../../src/storage/redis/redis-store.js';
import { startCluster, startRedis, startSentinel } from './redis.js';

export type RedisShape = 'single' | 'sentinel' | 'cluster';

export interface RedisStoreHandle {
  readonly store: RedisStore;
  /** Options to open more stores on the same servers (more replicas). */
  readonly options: RedisStoreOptions;
  /** Port of a server to send raw commands to (the standalone server, the master, or a cluster node). */
  readonly port: number;
  readonly stop: () => Promise<void>;
}

export async function startRedisStore(shape: RedisShape, extra: Partial<RedisStoreOptions> = {}): Promise<RedisStoreHandle> {
  let options: RedisStoreOptions;
  let stop: () => Promise<void>;
  let port: number;
  if (shape === 'single') {
    const redis = await startRedis();
    port = redis.port;
    options = { url: redis.url, ...extra };
    stop = () => redis.stop();
  } else if (shape === 'sentinel') {
    const redis = await startRedis();
    const sentinel = await startSentinel(redis.port);
    port = redis.port;
    options = { url: 'redis://', type: 'sentinel', sentinelMaster: sentinel.masterName, sentinels: sentinel.sentinels, ...extra };
    stop = async () => {
      await sentinel.stop();
      await redis.stop();
    };
  } else {
    const cluster = await startCluster();
    port = cluster.nodes[0]!.port;
    options = { url: `redis://${cluster.nodes[0]!.host}:${cluster.nodes[0]!.port}`, type: 'cluster', clusterNodes: cluster.nodes, ...extra };
    stop = () => cluster.stop();
  }
  let store: RedisStore | undefined;
  try {
    store = createRedisStore(options);
    await store.waitUntilReady(10_000);
  } catch (error) {
    await store?.close();
    await stop();
    throw error;
  }
  return { store, options, port, stop };
}

/** Closes each store, then stops its servers (handles that never started are skipped). */
export async function closeRedisStores(...handles: (RedisStoreHandle | undefined)[]): Promise<void> {
  const started = handles.filter((h): h is RedisStoreHandle => h !== undefined);
  await Promise.all(started.map((h) => h.store.close()));
  await Promise.all(started.map((h) => h.stop()));
}
