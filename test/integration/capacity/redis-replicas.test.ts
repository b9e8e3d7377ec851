/**
 * The capacity service on Redis (src/capacity/redis-capacity.ts): replicas with their own connections on one
 * real redis-server share one state. Concurrent clients asking either replica never hold more than the
 * capacity between them; sequential answers are the memory store's (so Doorman's); both replicas are masters;
 * learning mode follows the marker key (kept over a replica restart, back after FLUSHALL).
 */
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapacityServer } from '../../../src/capacity/capacity-server.js';
import type { CapacityConfig } from '../../../src/capacity/config.js';
import type { RedisCapacity } from '../../../src/capacity/redis-capacity.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { capacityKeys } from '../../../src/vocab/keys.js';
import type { RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ask, capacityConfig as config, startReplica, sumInRedis as sumIn } from '../../support/capacity-redis.js';
import { prng } from '../../support/prng.js';
import { startRedis } from '../../support/redis.js';

let redis: Awaited<ReturnType<typeof startRedis>>;
const stores: RedisStore[] = [];

async function replica(cfg: CapacityConfig, clock: FakeClock, name: string): Promise<RedisCapacity> {
  const r = await startReplica({ url: redis.url }, cfg, clock, name);
  stores.push(r.store);
  return r.capacity;
}

const sumInRedis = (resource: string, nowMs: number) => sumIn(stores[0]!, resource, nowMs);

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await redis?.stop();
});

describe('capacity keys', () => {
  it('put the keys of one resource on one Cluster slot, whatever the id (braces, prefix with braces, long, empty)', () => {
    for (const [prefix, id] of [
      ['rl:', 'api'],
      ['rl:', 'a}b{c'],
      ['{x}', 'api'],
      ['rl:', 'r'.repeat(2000)],
      ['', ''],
    ] as const) {
      const k = capacityKeys(prefix, id);
      expect(new Set([k.leases, k.version, k.since, k.log, k.expiries].map((key) => calculateSlot(key))).size).toBe(1);
    }
    expect(capacityKeys('rl:', 'a').leases).not.toBe(capacityKeys('rl:', 'b').leases);
  });
});

describe('capacity on Redis: replicas share one state', () => {
  it('40 concurrent clients on two replicas never hold more than the capacity, round after round', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = config('FAIR_SHARE', 100, 0);
    const replicas = [await replica(cfg, clock, 'a'), await replica(cfg, clock, 'b')];
    const rand = prng('capacity-redis');
    const latest = new Map<string, number>();
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => {
          const client = `c${i}`;
          const wants = rand.int(1, 20);
          return ask(replicas[(i + round) % 2]!, client, 'shared', wants).then((a) => latest.set(client, a.gets.capacity));
        }),
      );
      expect(answers).toHaveLength(40);
      const held = [...latest.values()].reduce((a, b) => a + b, 0);
      expect(held).toBeLessThanOrEqual(100 + 1e-9);
      expect(await sumInRedis('shared', clock.nowMs())).toBeLessThanOrEqual(100 + 1e-9);
      clock.advance(5000);
    }
    // The replicas did race (some decisions were read again after the other's write), and still held.
    expect(replicas[0]!.retries + replicas[1]!.retries).toBeGreaterThan(0);
    // Demand (40 × 1..20) exceeds 100: the capacity is in use, not merely never granted.
    expect(await sumInRedis('shared', clock.nowMs())).toBeGreaterThan(50);
  });

  it("sequential asks alternating replicas get the memory store's answers (Doorman's 60/50/10), the same lease from either", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = config('FAIR_SHARE', 120, 0);
    const [a, b] = [await replica(cfg, clock, 'a'), await replica(cfg, clock, 'b')];
    const memory = new CapacityServer({ clock, config: () => cfg, address: () => 'm', stateSinceMs: clock.nowMs() });
    const wants: [string, number][] = [
      ['x', 1000],
      ['y', 50],
      ['z', 10],
    ];
    let n = 0;
    for (let round = 0; round < 3; round++) {
      for (const [client, w] of wants) {
        const got = await ask(n++ % 2 === 0 ? a : b, client, 'seq', w);
        const want = memory.getCapacity({ client_id: client, resource: [{ resource_id: 'seq', priority: 1, wants: w }] }).response[0]!;
        expect(got).toEqual(want);
      }
    }
    const fromA = await ask(a, 'y', 'seq', 50);
    const fromB = await ask(b, 'y', 'seq', 50);
    expect([fromA.gets.capacity, fromB.gets.capacity]).toEqual([50, 50]);
    expect(a.discovery().is_master).toBe(true);
    expect(b.discovery().is_master).toBe(true);
  });

  it('a release on one replica frees the capacity for the other', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = config('FAIR_SHARE', 10, 0);
    const [a, b] = [await replica(cfg, clock, 'a'), await replica(cfg, clock, 'b')];
    expect((await ask(a, 'p', 'rel', 10)).gets.capacity).toBe(10);
    expect((await ask(b, 'q', 'rel', 10)).gets.capacity).toBe(0);
    await a.releaseCapacity({ client_id: 'p', resource_id: ['rel'] });
    expect((await ask(b, 'q', 'rel', 10)).gets.capacity).toBe(10);
  });

  it('learning mode after the state began, not after a replica restart, again after FLUSHALL', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = config('FAIR_SHARE', 100, 30);
    const first = await replica(cfg, clock, 'a');
    // Learning: the reported has is echoed, even above the fair share.
    expect((await ask(first, 'l1', 'learn', 80, 70)).gets.capacity).toBe(70);
    clock.advance(31_000);
    expect((await ask(first, 'l1', 'learn', 80, 70)).gets.capacity).toBe(80);
    // A new replica process (its own start time) on the same Redis: the state is kept, no learning.
    const restarted = await replica(cfg, clock, 'a2');
    expect((await ask(restarted, 'l2', 'learn', 80, 60)).gets.capacity).toBe(20);
    // The state is lost: learning again, from the flush.
    await stores[0]!.connection.flushall();
    expect((await ask(restarted, 'l2', 'learn', 80, 60)).gets.capacity).toBe(60);
  });
});
