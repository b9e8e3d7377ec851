/**
 * The capacity service on a real Redis Cluster (three masters): each resource's five keys share its hash tag,
 * so exchange.lua runs on the node of that slot (a key elsewhere would be CROSSSLOT). Two replicas
 * on resources spread over the nodes answer as one process would, see each other's grants and releases, and
 * never hold more than the capacity between them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import calculateSlot from 'cluster-key-slot';
import { FakeClock } from '../../../src/vocab/clock.js';
import { capacityKeys } from '../../../src/vocab/keys.js';
import { PREFIX, ask, capacityConfig, copyOf, leasesInRedis, startReplica, type Replica } from '../../support/capacity-redis.js';
import { startRedisStore, closeRedisStores, type RedisStoreHandle } from '../../support/redis-stores.js';

let cluster: RedisStoreHandle | undefined;
const replicas: Replica[] = [];

beforeAll(async () => {
  cluster = await startRedisStore('cluster');
}, 60_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.store.close()));
  await closeRedisStores(cluster);
});

describe('capacity on Redis Cluster', () => {
  it('two replicas share each resource on its own slot: grants, releases and copies agree', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = capacityConfig('FAIR_SHARE', 120, 0);
    for (const name of ['a', 'b']) replicas.push(await startReplica(cluster!.options, cfg, clock, name));
    const [a, b] = replicas as [Replica, Replica];
    const resources = ['api', 'db', 'search', 'queue'];
    // Spread over the three masters' slot ranges (0-5460, 5461-10922, 10923-16383).
    const nodes = new Set(resources.map((r) => Math.floor(calculateSlot(capacityKeys(PREFIX, r).leases) / 5461)));
    expect(nodes.size).toBeGreaterThan(1);
    for (const r of resources) {
      // Doorman's 60/50/10 with the asks alternating replicas.
      expect((await ask(a.capacity, 'x', r, 1000)).gets.capacity).toBe(120);
      expect((await ask(b.capacity, 'y', r, 50)).gets.capacity).toBe(0);
      expect((await ask(a.capacity, 'z', r, 10)).gets.capacity).toBe(0);
      expect((await ask(b.capacity, 'x', r, 1000)).gets.capacity).toBe(60);
      expect((await ask(a.capacity, 'y', r, 50)).gets.capacity).toBe(50);
      expect((await ask(b.capacity, 'z', r, 10)).gets.capacity).toBe(10);
      await b.capacity.releaseCapacity({ client_id: 'y', resource_id: [r] });
      const held = await leasesInRedis(a.store, r, clock.nowMs());
      expect(held).toEqual(
        new Map([
          ['x', 60],
          ['z', 10],
        ]),
      );
      await a.capacity.cache.refresh(a.server.resource(r), clock.nowMs());
      expect(copyOf(a, r)).toEqual(held);
    }
  });
});
