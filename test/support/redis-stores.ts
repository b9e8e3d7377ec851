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
  readonly stop: () => Promise<void>;
}

export async function startRedisStore(shape: RedisShape, extra: Partial<RedisStoreOptions> = {}): Promise<RedisStoreHandle> {
  let options: RedisStoreOptions;
  let stop: () => Promise<void>;
  if (shape === 'single') {
    const redis = await startRedis();
    options = { url: redis.url, ...extra };
    stop = () => redis.stop();
  } else if (shape === 'sentinel') {
    const redis = await startRedis();
    const sentinel = await startSentinel(redis.port);
    options = { url: 'redis://', type: 'sentinel', sentinelMaster: sentinel.masterName, sentinels: sentinel.sentinels, ...extra };
    stop = async () => {
      await sentinel.stop();
      await redis.stop();
    };
  } else {
    const cluster = await startCluster();
    options = { url: `redis://${cluster.nodes[0]!.host}:${cluster.nodes[0]!.port}`, type: 'cluster', clusterNodes: cluster.nodes, ...extra };
    stop = () => cluster.stop();
  }
  const store = createRedisStore(options);
  await store.waitUntilReady(10_000);
  return { store, options, stop };
}
