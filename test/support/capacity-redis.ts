/**
 * Capacity replicas on real Redis for the tests of src/capacity/redis-capacity.ts: each replica is a
 * CapacityServer with its own connection (a RedisStore) deciding through RedisCapacity, as separate processes
 * would; plus reading back what Redis holds.
 */
import { CapacityServer } from '../../src/capacity/capacity-server.js';
import { parseCapacityConfig, type CapacityConfig } from '../../src/capacity/config.js';
import { RedisCapacity, unpackLease, type RedisCapacityOptions } from '../../src/capacity/redis-capacity.js';
import type { FakeClock } from '../../src/vocab/clock.js';
import { capacityKeys } from '../../src/vocab/keys.js';
import { createRedisStore, type RedisStore, type RedisStoreOptions } from '../../src/storage/redis/redis-store.js';

export const PREFIX = 'rl:';

export function capacityConfig(kind: string, capacity: number, learning: number, leaseLength = 60): CapacityConfig {
  const text = `resources:\n  - identifier_glob: "*"\n    capacity: ${capacity}\n    algorithm: {kind: ${kind}, lease_length: ${leaseLength}, refresh_interval: 5, learning_mode_duration: ${learning}}\n`;
  const cfg = parseCapacityConfig('r.yaml', text);
  if (!cfg.ok) throw new Error(cfg.errors.join('\n'));
  return cfg.config;
}

export interface Replica {
  readonly capacity: RedisCapacity;
  readonly server: CapacityServer;
  readonly store: RedisStore;
}

/** A replica on its own connection; the caller closes `store`. */
export async function startReplica(
  redis: RedisStoreOptions,
  cfg: CapacityConfig,
  clock: FakeClock,
  name: string,
  extra: Partial<RedisCapacityOptions> = {},
): Promise<Replica> {
  const store = createRedisStore({ ...redis, clock });
  await store.waitUntilReady(10_000);
  const server = new CapacityServer({ clock, config: () => cfg, address: () => name, stateSinceMs: clock.nowMs() });
  return { capacity: new RedisCapacity(server, { client: store.connection, prefix: PREFIX, clock, ...extra }), server, store };
}

export function ask(r: RedisCapacity, client: string, resource: string, wants: number, has?: number) {
  return r
    .getCapacity({
      client_id: client,
      resource: [{ resource_id: resource, priority: 1, wants, ...(has === undefined ? {} : { has: { capacity: has, expiry_time: 0, refresh_interval: 0 } }) }],
    })
    .then((res) => res.response[0]!);
}

/** The unexpired leases Redis holds for a resource: client → has. */
export async function leasesInRedis(store: RedisStore, resource: string, nowMs: number): Promise<Map<string, number>> {
  const all = await store.connection.hgetall(capacityKeys(PREFIX, resource).leases);
  const held = new Map<string, number>();
  for (const [client, text] of Object.entries(all)) {
    const lease = unpackLease(text);
    if (lease !== undefined && lease.expiryMs >= nowMs) held.set(client, lease.has);
  }
  return held;
}

export async function sumInRedis(store: RedisStore, resource: string, nowMs: number): Promise<number> {
  return [...(await leasesInRedis(store, resource, nowMs)).values()].reduce((a, b) => a + b, 0);
}

/** A replica's copy of a resource: client → has. */
export function copyOf(r: Replica, resource: string): Map<string, number> {
  const held = new Map<string, number>();
  r.server.find(resource)?.store.forEach((client, lease) => held.set(client, lease.has));
  return held;
}
