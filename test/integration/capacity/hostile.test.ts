/**
 * What hostile and careless clients send the capacity service, on the memory store and on a real redis-server,
 * as bytes through the service's routes (src/capacity/rpc.ts): non-finite `has`, ids that are not UTF-8, waves
 * of resources, huge wants, empty and long ids, a resource named twice, GetServerCapacity with no clients.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CapacityServer } from '../../../src/capacity/capacity-server.js';
import { parseCapacityConfig, type CapacityConfig } from '../../../src/capacity/config.js';
import type * as M from '../../../src/capacity/doorman-messages.js';
import { RedisCapacity } from '../../../src/capacity/redis-capacity.js';
import type { CapacityAnswers } from '../../../src/capacity/rpc.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { InvalidRequestError, RequestTooLargeError } from '../../../src/vocab/errors.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ByteCaller, decodeResponse, getCapacityBytes, getServerCapacityBytes } from '../../support/capacity-bytes.js';
import { startRedis } from '../../support/redis.js';

let redis: Awaited<ReturnType<typeof startRedis>>;
let conn: RedisStore;
const stores: RedisStore[] = [];

beforeAll(async () => {
  redis = await startRedis();
  conn = createRedisStore({ url: redis.url });
  await conn.waitUntilReady(10_000);
});

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await conn?.close();
  await redis?.stop();
});

function config(kind: string, capacity: number, learning = 0, lease = 60): CapacityConfig {
  const cfg = parseCapacityConfig(
    'r.yaml',
    `resources:\n  - identifier_glob: "*"\n    capacity: ${capacity}\n    algorithm: {kind: ${kind}, lease_length: ${lease}, refresh_interval: 1, learning_mode_duration: ${learning}}\n`,
  );
  if (!cfg.ok) throw new Error(cfg.errors.join('\n'));
  return cfg.config;
}

interface Setup {
  readonly caller: ByteCaller;
  readonly server: CapacityServer;
  readonly clock: FakeClock;
}

for (const backend of ['memory', 'redis'] as const) {
  describe(`capacity service on the ${backend} store, against hostile and careless clients`, () => {
    beforeEach(async () => {
      if (backend === 'redis') await conn.connection.flushall();
    });

    async function start(cfg: CapacityConfig, extra: { maxResources?: number; maxLeases?: number } = {}): Promise<Setup> {
      const clock = new FakeClock(1_700_000_000_000);
      const server = new CapacityServer({ clock, config: () => cfg, address: () => 'x', stateSinceMs: clock.nowMs(), ...extra });
      let answers: CapacityAnswers = server;
      if (backend === 'redis') {
        const store = createRedisStore({ url: redis.url, clock });
        await store.waitUntilReady(10_000);
        stores.push(store);
        answers = new RedisCapacity(server, {
          client: store.connection,
          prefix: 'rl:',
          clock,
          ...(extra.maxLeases === undefined ? {} : { maxLeases: extra.maxLeases }),
        });
      }
      return { caller: new ByteCaller(answers), server, clock };
    }

    for (const poison of [NaN, Infinity, -Infinity]) {
      it(`a reported has of ${poison} in learning mode poisons nothing: the others get their 10 after it is released`, async () => {
        const { caller, server, clock } = await start(config('FAIR_SHARE', 100, 8));
        expect(await caller.get('e', [{ resource: 'mix', wants: 10, has: poison }])).toEqual([0]);
        expect(await caller.get('f', [{ resource: 'mix', wants: 10, has: 50 }])).toEqual([50]);
        clock.advance(9000);
        await caller.release('e', ['mix']);
        for (let round = 0; round < 3; round++) {
          for (const c of ['f', 'z', 'g']) {
            const [got] = await caller.get(c, [{ resource: 'mix', wants: 10 }]);
            if (round > 0) expect(got, `${c} round ${round}`).toBe(10);
          }
        }
        const res = server.find('mix')!;
        expect(
          { sumHas: Number.isFinite(res.store.sumHas), sumWants: Number.isFinite(res.store.sumWants) },
          `sumHas ${res.store.sumHas}, sumWants ${res.store.sumWants}`,
        ).toEqual({ sumHas: true, sumWants: true });
      });
    }

    it('ids are bytes: two clients whose ids differ only in bytes that are not UTF-8 are two clients', async () => {
      const { caller } = await start(config('FAIR_SHARE', 1000));
      const x1 = Buffer.from([0x78, 0xff]);
      const x2 = Buffer.from([0x78, 0xfe]);
      expect(await caller.get(x1, [{ resource: 'bytes', wants: 600 }])).toEqual([600]);
      expect(await caller.get(x2, [{ resource: 'bytes', wants: 600 }])).toEqual([400]);
      expect(await caller.get(x2, [{ resource: 'bytes', wants: 600 }])).toEqual([400]);
      await caller.release(x2, ['bytes']);
      expect(await caller.get('y', [{ resource: 'bytes', wants: 1000 }])).toEqual([400]);
    });

    it('a resource id that is not UTF-8 is kept and echoed byte for byte', async () => {
      const { caller } = await start(config('STATIC', 10));
      const a = Buffer.from('in-26\xff\xfe', 'latin1');
      const b = Buffer.from('in-26\xfe\xff', 'latin1');
      const answer = await caller.raw(
        'GetCapacity',
        getCapacityBytes('c', [
          { resource: a, wants: 3 },
          { resource: b, wants: 4 },
        ]),
      );
      expect(answer.indexOf(a)).toBeGreaterThan(0);
      expect(answer.indexOf(b)).toBeGreaterThan(answer.indexOf(a));
      expect(await caller.get('c', [{ resource: b, wants: 5 }])).toEqual([5]);
    });

    it('a resource is dropped with its last lease, released or expired, and leaves no key without a TTL', async () => {
      const { caller, server, clock } = await start(config('FAIR_SHARE', 100, 0, 3));
      for (let i = 0; i < 50; i++) await caller.get(`c${i % 3}`, [{ resource: `wave-${i}`, wants: 1 }]);
      expect(server.resourceCount).toBe(50);
      await caller.release('c0', ['wave-0', 'wave-3']);
      server.cleanAll();
      expect(server.resourceCount).toBe(48);
      clock.advance(4000);
      server.cleanAll();
      expect(server.resourceCount).toBe(0);
      // Releases of resources never asked for leave nothing, anywhere.
      await caller.release(
        'c9',
        Array.from({ length: 100 }, (_, i) => `never-${i}`),
      );
      expect(server.resourceCount).toBe(0);
      if (backend === 'redis') {
        const keys = await conn.connection.keys('*');
        expect(keys.filter((k) => k.includes('never-'))).toEqual([]);
        for (const k of keys) expect(await conn.connection.pttl(k), k).toBeGreaterThan(0);
      }
    });

    it('CAPACITY_MAX_RESOURCES bounds the resources kept: what fits is answered, the rest left out, nothing at all is RESOURCE_EXHAUSTED', async () => {
      const { caller, server } = await start(config('STATIC', 10), { maxResources: 3 });
      expect(
        await caller.get('a', [
          { resource: 'r1', wants: 1 },
          { resource: 'r2', wants: 1 },
        ]),
      ).toEqual([1, 1]);
      const answer = decodeResponse<M.GetCapacityResponse>(
        'GetCapacity',
        await caller.raw(
          'GetCapacity',
          getCapacityBytes('a', [
            { resource: 'r3', wants: 3 },
            { resource: 'r4', wants: 4 },
            { resource: 'r1', wants: 2 },
          ]),
        ),
      );
      expect(answer.response.map((r) => [r.resource_id, r.gets.capacity])).toEqual([
        ['r3', 3],
        ['r1', 2],
      ]);
      expect(server.resourceCount).toBe(3);
      await expect(caller.get('a', [{ resource: 'r5', wants: 1 }])).rejects.toBeInstanceOf(RequestTooLargeError);
      await caller.release('a', ['r2']);
      expect(await caller.get('a', [{ resource: 'r5', wants: 1 }])).toEqual([1]);
    });

    it('CAPACITY_MAX_LEASES: a new client past it is left out (RESOURCE_EXHAUSTED when nothing is answered); holders refresh', async () => {
      const { caller } = await start(config('STATIC', 10), { maxLeases: 2 });
      expect(await caller.get('a', [{ resource: 'L', wants: 1 }])).toEqual([1]);
      expect(await caller.get('b', [{ resource: 'L', wants: 2 }])).toEqual([2]);
      await expect(caller.get('c', [{ resource: 'L', wants: 3 }])).rejects.toBeInstanceOf(RequestTooLargeError);
      expect(await caller.get('a', [{ resource: 'L', wants: 4 }])).toEqual([4]);
    });

    it('finite wants above 2^53 get min(capacity, wants); sums stay finite', async () => {
      const { caller, server } = await start(config('FAIR_SHARE', 1000));
      expect(await caller.get('a', [{ resource: 'huge', wants: 1e308 }])).toEqual([1000]);
      expect(await caller.get('b', [{ resource: 'huge', wants: Number.MAX_VALUE }])).toEqual([0]);
      expect(Number.isFinite(server.find('huge')!.store.sumWants)).toBe(true);
      const s = await start(config('STATIC', 50));
      expect(await s.caller.get('a', [{ resource: 'st', wants: 1e308 }])).toEqual([50]);
      await expect(caller.get('a', [{ resource: 'huge', wants: Infinity }])).rejects.toBeInstanceOf(InvalidRequestError);
    });

    it('empty ids and ids far over 1,024 bytes are answered, as by Doorman', async () => {
      const { caller } = await start(config('STATIC', 10));
      expect(await caller.get('', [{ resource: '', wants: 3 }])).toEqual([3]);
      const long = 'r'.repeat(100_000);
      const answer = decodeResponse<M.GetCapacityResponse>(
        'GetCapacity',
        await caller.raw('GetCapacity', getCapacityBytes('c'.repeat(50_000), [{ resource: long, wants: 4 }])),
      );
      expect(answer.response[0]).toMatchObject({ resource_id: long, gets: { capacity: 4 } });
      await caller.release('c'.repeat(50_000), [long]);
      await caller.release('', ['']);
    });

    it('a resource named twice in one request: the last entry is decided and both entries get its grant', async () => {
      const { caller, server } = await start(config('FAIR_SHARE', 120));
      expect(
        await caller.get('a', [
          { resource: 'fair', wants: 1000 },
          { resource: 'fair', wants: 0 },
        ]),
      ).toEqual([0, 0]);
      expect(server.find('fair')!.store.get('a')!.wants).toBe(0);
      expect(
        await caller.get('a', [
          { resource: 'fair', wants: 0 },
          { resource: 'fair', wants: 1000 },
        ]),
      ).toEqual([120, 120]);
    });

    it('GetServerCapacity with num_clients < 1 is INVALID_ARGUMENT "subclients should be > 0", as Doorman', async () => {
      const { caller } = await start(config('FAIR_SHARE', 120));
      for (const n of [0, -3]) {
        await expect(caller.raw('GetServerCapacity', getServerCapacityBytes('s', 'r', [{ priority: 1, num_clients: n, wants: 10 }]))).rejects.toThrow(
          /subclients should be > 0/,
        );
      }
    });
  });
}
