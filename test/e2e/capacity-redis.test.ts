/**
 * BACKEND=redis with CAPACITY_CONFIG through the real service (app/start-service.ts wiring, both gRPC transports' routes):
 * two services on one real redis-server are both masters and answer one shared state, whichever is asked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { capacityCaller, type CapacityCaller } from '../support/capacity-peers.js';
import { startRedis } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = { 'rules.yaml': 'domain: web\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n' };
const CONFIG = `resources:
  - identifier_glob: "*"
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 5, learning_mode_duration: 0}
`;

interface Answer {
  response: { resource_id: string; gets: { capacity: number } }[];
}

describe('capacity service on BACKEND=redis: two replicas, one state', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let dir: string;
  const services: TestService[] = [];
  const callers: CapacityCaller[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'capacity-redis-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    const clock = new FakeClock(1_700_000_000_000);
    for (let i = 0; i < 2; i++) {
      const s = await startTestService(RULES, { backend: 'redis', redisUrl: redis.url, capacityConfig: join(dir, 'resources.yaml') }, clock);
      services.push(s);
      callers.push(capacityCaller(s.grpcAddress));
    }
  });

  afterAll(async () => {
    for (const c of callers) c.close();
    await Promise.all(services.map((s) => s.close()));
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const get = (i: number, client: string, wants: number) =>
    callers[i]!.call<Answer>('GetCapacity', { client_id: client, resource: [{ resource_id: 'api', priority: 1, wants }] });

  it('both answer Discovery as master', async () => {
    for (const [i, c] of callers.entries())
      expect(await c.call('Discovery', {})).toMatchObject({ is_master: true, mastership: { master_address: services[i]!.grpcAddress } });
  });

  it('grants of one replica are seen by the other: never more than the capacity between them', async () => {
    expect((await get(0, 'a', 80)).response[0]!.gets.capacity).toBe(80);
    // Replica 1 knows a's 80 from Redis: b gets what is left, not the whole capacity.
    expect((await get(1, 'b', 80)).response[0]!.gets.capacity).toBe(20);
    // a refreshes on the other replica: its fair share (50), as one process would answer.
    expect((await get(1, 'a', 80)).response[0]!.gets.capacity).toBe(50);
    await callers[0]!.call('ReleaseCapacity', { client_id: 'a', resource_id: ['api'] });
    expect((await get(0, 'b', 80)).response[0]!.gets.capacity).toBe(80);
    // Each replica's Redis work on /metrics. Replica 0: a full read (first use), a's write, the release sent on
    // a copy behind replica 1's writes (refused, the changes come back: one retry), the release again, b's write.
    // Replica 1: a full read, b's write, a's write on a copy still current.
    const metrics = await Promise.all(services.map(async (s) => (await fetch(`${s.httpBase}/metrics`)).text()));
    const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(metrics.map((m) => value(m, 'ratelimit_capacity_redis_full_reads_total'))).toEqual([1, 1]);
    expect(metrics.map((m) => value(m, 'ratelimit_capacity_redis_round_trips_total'))).toEqual([5, 3]);
    expect(metrics.map((m) => value(m, 'ratelimit_capacity_redis_retries_total'))).toEqual([1, 0]);
    expect(metrics.map((m) => value(m, 'ratelimit_capacity_redis_fallbacks_total'))).toEqual([0, 0]);
  });

  it('one request for several resources: answered in its order, each on its own state, seen by the other replica', async () => {
    const ask = (i: number, client: string, wants: Record<string, number>) =>
      callers[i]!.call<Answer>('GetCapacity', {
        client_id: client,
        resource: Object.entries(wants).map(([resource_id, w]) => ({ resource_id, priority: 1, wants: w })),
      });
    const first = await ask(0, 'm', { x1: 30, x2: 300, x3: 5 });
    expect(first.response.map((r) => [r.resource_id, r.gets.capacity])).toEqual([
      ['x1', 30],
      ['x2', 100],
      ['x3', 5],
    ]);
    // On the other replica: x3 has 95 left; x2 is all m's (FAIR_SHARE takes nothing back before m refreshes).
    const second = await ask(1, 'n', { x3: 100, x2: 100 });
    expect(second.response.map((r) => [r.resource_id, r.gets.capacity])).toEqual([
      ['x3', 95],
      ['x2', 0],
    ]);
  });
});
