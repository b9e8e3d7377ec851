/**
 * A MemcachedStore on real memcached servers started for the test (test/support/memcached.ts).
 */
import { MemcachedClient } from '../../src/storage/memcached/memcached-client.js';
import { MemcachedStore } from '../../src/storage/memcached/memcached-store.js';
import { startMemcached, type MemcachedProcess } from './memcached.js';

export interface MemcachedStoreHandle {
  readonly store: MemcachedStore;
  readonly servers: MemcachedProcess[];
  stop(): Promise<void>;
}

export async function startMemcachedStore(count = 1, options: { replyTimeoutMs?: number } = {}): Promise<MemcachedStoreHandle> {
  const servers = await Promise.all(Array.from({ length: count }, () => startMemcached()));
  const client = new MemcachedClient({
    servers: servers.map((s) => s.address),
    connectionsPerServer: 2,
    connectTimeoutMs: 500,
    replyTimeoutMs: options.replyTimeoutMs ?? 2_000,
  });
  const store = new MemcachedStore({ client, keyPrefix: 'rl:' });
  await store.waitUntilReady(5_000);
  return { store, servers, stop: async () => void (await Promise.all(servers.map((s) => s.stop()))) };
}
