/**
 * The replicas' copies of the capacity state on Redis (src/capacity/redis-lease-cache.ts): a replica catches up
 * with the changes since its version, reads the whole state only when its copy is of a lost state or the log
 * no longer reaches back, and decides on a copy equal to what Redis holds. Three replicas with interleaved
 * concurrent clients, a log shorter than the traffic, the log deleted and the state flushed mid-run: never more
 * than the capacity between them, every copy equal to Redis afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CapacityServer } from '../../../src/capacity/capacity-server.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { capacityKeys } from '../../../src/vocab/keys.js';
import { PREFIX, ask, capacityConfig, copyOf, leasesInRedis, startReplica, sumInRedis, type Replica } from '../../support/capacity-redis.js';
import { prng } from '../../support/prng.js';
import { startRedis } from '../../support/redis.js';

let redis: Awaited<ReturnType<typeof startRedis>>;
const replicas: Replica[] = [];

async function replicasOf(n: number, clock: FakeClock, kind = 'FAIR_SHARE', capacity = 100, logLength?: number): Promise<Replica[]> {
  const cfg = capacityConfig(kind, capacity, 0);
  const made: Replica[] = [];
  for (let i = 0; i < n; i++) made.push(await startReplica({ url: redis.url }, cfg, clock, `r${i}`, logLength === undefined ? {} : { logLength }));
  replicas.push(...made);
  return made;
}

/** Every replica synchronised at `now` holds exactly the unexpired leases Redis holds. */
async function expectCopiesEqualRedis(rs: Replica[], resource: string, now: number): Promise<void> {
  const truth = await leasesInRedis(rs[0]!.store, resource, now);
  for (const r of rs) {
    await r.capacity.cache.refresh(r.server.resource(resource), now);
    expect(copyOf(r, resource)).toEqual(truth);
  }
}

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.store.close()));
  await redis?.stop();
});

describe('capacity on Redis: incremental copies', () => {
  it('one replica decides in one round trip and O(1) transfer: after the first read, no read and no change to apply, at 1,000 clients', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a] = await replicasOf(1, clock, 'FAIR_SHARE', 20_000);
    for (let i = 0; i < 1000; i++) await ask(a!.capacity, `c${i}`, 'solo', 1 + ((i * 37) % 100));
    const before = { ...a!.capacity.cache.stats };
    for (let i = 0; i < 200; i++) await ask(a!.capacity, `c${i % 7}`, 'solo', 1000);
    expect(a!.capacity.cache.stats.fullReads).toBe(before.fullReads);
    expect(a!.capacity.cache.stats.changesApplied).toBe(before.changesApplied);
    // One round trip per decision: the write; nothing is read back.
    expect(a!.capacity.cache.stats.exchanges - before.exchanges).toBe(200);
    expect(before.fullReads).toBe(1);
    await expectCopiesEqualRedis([a!], 'solo', clock.nowMs());
  });

  it('concurrent asks on one replica are decided in one batch, one change per client, answered as the memory store answers them in order', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a] = await replicasOf(1, clock, 'FAIR_SHARE', 500);
    const memory = new CapacityServer({ clock, config: () => capacityConfig('FAIR_SHARE', 500, 0), address: () => 'm', stateSinceMs: clock.nowMs() });
    const rand = prng('capacity-batch');
    for (let round = 0; round < 3; round++) {
      const asks = Array.from({ length: 60 }, (_, i) => ({ client: `c${(i * 5 + round) % 40}`, wants: rand.int(1, 40) }));
      const before = a!.capacity.cache.stats.exchanges;
      const version = async (): Promise<number> => Number((await a!.store.connection.get(capacityKeys(PREFIX, 'batch').version)) ?? 0);
      const v0 = await version();
      const got = await Promise.all(asks.map((x) => ask(a!.capacity, x.client, 'batch', x.wants)));
      // All 60 asks made in one turn of the event loop go in one round trip (the first is not sent alone), and
      // a client asked for several times in it is written once: one change per client.
      expect(a!.capacity.cache.stats.exchanges - before).toBe(round === 0 ? 2 : 1);
      expect((await version()) - v0).toBe(new Set(asks.map((x) => x.client)).size);
      const want = asks.map((x) => memory.getCapacity({ client_id: x.client, resource: [{ resource_id: 'batch', priority: 1, wants: x.wants }] }).response[0]!);
      expect(got.map((g) => g.gets)).toEqual(want.map((w) => w.gets));
      clock.advance(5000);
    }
  });

  it('a request naming 200 resources (more than are decided at once): every answer in its order, as the memory store gives', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a] = await replicasOf(1, clock, 'FAIR_SHARE', 50);
    const memory = new CapacityServer({ clock, config: () => capacityConfig('FAIR_SHARE', 50, 0), address: () => 'm', stateSinceMs: clock.nowMs() });
    for (const client of ['p', 'q']) {
      const req = { client_id: client, resource: Array.from({ length: 200 }, (_, i) => ({ resource_id: `many-${i}`, priority: 1, wants: 10 + (i % 70) })) };
      const got = await a!.capacity.getCapacity(req);
      expect(got.response.map((r) => r.resource_id)).toEqual(req.resource.map((r) => r.resource_id));
      expect(got).toEqual(memory.getCapacity(req));
    }
  });

  it('priorities and intermediate servers (bands, subclients) alternating three replicas: the memory store answers, each kind', async () => {
    for (const kind of ['FAIR_SHARE', 'PROPORTIONAL_SHARE', 'STATIC', 'NO_ALGORITHM']) {
      const clock = new FakeClock(1_700_000_000_000);
      const rs = await replicasOf(3, clock, kind, 120);
      const memory = new CapacityServer({ clock, config: () => capacityConfig(kind, 120, 0), address: () => 'm', stateSinceMs: clock.nowMs() });
      const rand = prng(`capacity-bands-${kind}`);
      const resource = `bands-${kind}`;
      for (let i = 0; i < 60; i++) {
        const r = rs[i % 3]!.capacity;
        if (i % 4 === 3) {
          const req = {
            server_id: `s${rand.int(0, 2)}`,
            resource: [{ resource_id: resource, wants: [{ priority: rand.int(0, 2), num_clients: rand.int(1, 4), wants: rand.int(0, 90) }] }],
          };
          expect((await r.getServerCapacity(req)).response[0]!.gets).toEqual(memory.getServerCapacity(req).response[0]!.gets);
        } else if (i % 11 === 5) {
          const req = { client_id: `c${rand.int(0, 5)}`, resource_id: [resource] };
          await r.releaseCapacity(req);
          memory.releaseCapacity(req);
        } else {
          const req = { client_id: `c${rand.int(0, 5)}`, resource: [{ resource_id: resource, priority: rand.int(0, 2), wants: rand.int(0, 80) }] };
          expect((await r.getCapacity(req)).response[0]!).toEqual(memory.getCapacity(req).response[0]!);
        }
        clock.advance(rand.int(0, 3000));
      }
      await expectCopiesEqualRedis(rs, resource, clock.nowMs());
    }
  });

  it('a second replica applies only the changes since its version; a restarted one (no copy) reads the whole state once', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a, b] = await replicasOf(2, clock);
    for (let i = 0; i < 300; i++) await ask(a!.capacity, `c${i}`, 'pair', 1);
    await ask(b!.capacity, 'c0', 'pair', 1); // b's first use: one full read
    const stats = { ...b!.capacity.cache.stats };
    await ask(a!.capacity, 'c1', 'pair', 2);
    await ask(a!.capacity, 'c2', 'pair', 3);
    await ask(b!.capacity, 'c3', 'pair', 4);
    expect(b!.capacity.cache.stats.fullReads - stats.fullReads).toBe(0);
    expect(b!.capacity.cache.stats.changesApplied - stats.changesApplied).toBe(2);
    const [restarted] = await replicasOf(1, clock);
    await ask(restarted!.capacity, 'c4', 'pair', 5);
    expect(restarted!.capacity.cache.stats.fullReads).toBe(1);
    await expectCopiesEqualRedis([a!, b!, restarted!], 'pair', clock.nowMs());
  });

  it('three replicas, interleaved concurrent clients, a short log, the log deleted mid-run: never more than the capacity', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const rs = await replicasOf(3, clock, 'FAIR_SHARE', 100, 16);
    const rand = prng('capacity-redis-sync');
    const latest = new Map<string, number>();
    for (let round = 0; round < 8; round++) {
      if (round === 4) await rs[0]!.store.connection.del(capacityKeys(PREFIX, 'three').log);
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => {
          const client = `c${(i * 7 + round) % 45}`;
          return ask(rs[(i + round) % 3]!.capacity, client, 'three', rand.int(1, 20)).then((a) => latest.set(client, a.gets.capacity));
        }),
      );
      // The clients' own view: each holds its latest answer (leases last 60 s, rounds are 5 s apart).
      expect([...latest.values()].reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(100 + 1e-9);
      expect(await sumInRedis(rs[0]!.store, 'three', clock.nowMs())).toBeLessThanOrEqual(100 + 1e-9);
      clock.advance(5000);
    }
    const stats = rs.map((r) => r.capacity.cache.stats);
    // The log (16 changes) was outrun or lost: some copies were read whole, others caught up from changes.
    expect(stats.reduce((n, s) => n + s.fullReads, 0)).toBeGreaterThan(3);
    expect(stats.reduce((n, s) => n + s.changesApplied, 0)).toBeGreaterThan(0);
    expect(rs.reduce((n, r) => n + r.capacity.retries, 0)).toBeGreaterThan(0);
    expect(await sumInRedis(rs[0]!.store, 'three', clock.nowMs())).toBeGreaterThan(50);
    await expectCopiesEqualRedis(rs, 'three', clock.nowMs());
  });

  it('a flush (even within the same millisecond) is seen by every copy: the lost leases are gone, versions restart', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a, b] = await replicasOf(2, clock, 'FAIR_SHARE', 10);
    expect((await ask(a!.capacity, 'p', 'flush', 10)).gets.capacity).toBe(10);
    expect((await ask(b!.capacity, 'q', 'flush', 10)).gets.capacity).toBe(0);
    await a!.store.connection.flushall();
    // b's copy says p holds 10; the state is lost, so q gets it all (learning mode is off here).
    expect((await ask(b!.capacity, 'q', 'flush', 10)).gets.capacity).toBe(10);
    // a's copy is of the old state at a higher version than the new one: it must not take the new log as its own.
    expect((await ask(a!.capacity, 'p', 'flush', 10)).gets.capacity).toBe(0);
    await expectCopiesEqualRedis([a!, b!], 'flush', clock.nowMs());
  });

  it('expired leases leave Redis and every copy; their share goes to the next asker', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = capacityConfig('FAIR_SHARE', 30, 0, 20);
    const [a, b] = [await startReplica({ url: redis.url }, cfg, clock, 'a'), await startReplica({ url: redis.url }, cfg, clock, 'b')];
    replicas.push(a, b);
    for (const c of ['x', 'y', 'z']) expect((await ask(a.capacity, c, 'exp', 10)).gets.capacity).toBe(10);
    clock.advance(10_000);
    expect((await ask(b.capacity, 'y', 'exp', 10)).gets.capacity).toBe(10); // y refreshed, x and z not
    clock.advance(10_001); // x and z expired, y holds until +30 s
    expect((await ask(b.capacity, 'w', 'exp', 30)).gets.capacity).toBe(20);
    const k = capacityKeys(PREFIX, 'exp');
    expect(Object.keys(await a.store.connection.hgetall(k.leases)).sort()).toEqual(['w', 'y']);
    expect(await a.store.connection.zcard(k.expiries)).toBe(2);
    await expectCopiesEqualRedis([a, b], 'exp', clock.nowMs());
    expect([...copyOf(a, 'exp').keys()].sort()).toEqual(['w', 'y']);
    // Once every lease has run out the resource's hash, expiries and log expire in Redis too.
    const ttl = await a.store.connection.pttl(k.log);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(20_000 + 1000);
  });

  it('client ids with newlines, spaces and dashes travel through the log unchanged', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a, b] = await replicasOf(2, clock, 'FAIR_SHARE', 30);
    await ask(b!.capacity, 'first', 'odd ids', 1); // b's copy exists before the odd ids are written
    const ids = ['-\n-', 'a\nb c', ' 1 2 3 4 5 6', '{tag}\n'];
    for (const id of ids) expect((await ask(a!.capacity, id, 'odd ids', 5)).gets.capacity).toBe(5);
    const full = b!.capacity.cache.stats.fullReads;
    expect((await ask(b!.capacity, 'last', 'odd ids', 30)).gets.capacity).toBe(9);
    expect(b!.capacity.cache.stats.fullReads).toBe(full);
    expect([...copyOf(b!, 'odd ids').keys()].sort()).toEqual([...ids, 'first', 'last'].sort());
    await a!.capacity.releaseCapacity({ client_id: '-\n-', resource_id: ['odd ids'] });
    await expectCopiesEqualRedis([a!, b!], 'odd ids', clock.nowMs());
  });

  it('a release on one replica reaches the others as a change, and releasing an unknown client writes nothing', async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const [a, b] = await replicasOf(2, clock, 'FAIR_SHARE', 10);
    expect((await ask(a!.capacity, 'p', 'rel', 10)).gets.capacity).toBe(10);
    expect((await ask(b!.capacity, 'q', 'rel', 10)).gets.capacity).toBe(0);
    const version = await a!.store.connection.get(capacityKeys(PREFIX, 'rel').version);
    await a!.capacity.releaseCapacity({ client_id: 'nobody', resource_id: ['rel'] });
    expect(await a!.store.connection.get(capacityKeys(PREFIX, 'rel').version)).toBe(version);
    await a!.capacity.releaseCapacity({ client_id: 'p', resource_id: ['rel'] });
    const full = b!.capacity.cache.stats.fullReads;
    expect((await ask(b!.capacity, 'q', 'rel', 10)).gets.capacity).toBe(10);
    expect(b!.capacity.cache.stats.fullReads).toBe(full);
    await expectCopiesEqualRedis([a!, b!], 'rel', clock.nowMs());
  });
});
