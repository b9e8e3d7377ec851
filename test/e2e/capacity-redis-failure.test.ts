/**
 * The capacity service on BACKEND=redis when Redis fails, through the real service and a real redis-server:
 * paused (SIGSTOP), every call answers UNAVAILABLE by DECISION_MAX_WAIT_MS (none queues behind the stalled one,
 * none hangs to its own deadline) and the held leases are intact once Redis answers again; stopped, calls fail
 * at once with UNAVAILABLE naming Redis; restarted empty, the service decides again on the new state.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { capacityCaller, type CapacityCaller } from '../support/capacity-peers.js';
import { eventually } from '../support/eventually.js';
import { redisPid } from '../support/redis-faults.js';
import { startRedis } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const CONFIG = `resources:
  - identifier_glob: "*"
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 5, learning_mode_duration: 0}
`;
/** The bound under test; calls carry a 20 s deadline of their own, far beyond it. */
const MAX_WAIT_MS = 1500;

interface Answer {
  response: { resource_id: string; gets: { capacity: number } }[];
}

describe('capacity service on BACKEND=redis when Redis fails', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let dir: string;
  let service: TestService;
  let caller: CapacityCaller;

  beforeAll(async () => {
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'capacity-redis-failure-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    service = await startTestService(
      {},
      { backend: 'redis', redisUrl: redis.url, capacityConfig: join(dir, 'resources.yaml'), decisionMaxWaitMs: MAX_WAIT_MS },
      new FakeClock(1_700_000_000_000),
    );
    caller = capacityCaller(service.grpcAddress);
  });

  afterAll(async () => {
    caller?.close();
    await service?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const get = (client: string, wants: number) =>
    caller.call<Answer>('GetCapacity', { client_id: client, resource: [{ resource_id: 'api', priority: 1, wants }] }, 20_000);

  it('paused: concurrent calls answer UNAVAILABLE by DECISION_MAX_WAIT_MS; after SIGCONT the leases are intact', async () => {
    expect((await get('a', 60)).response[0]!.gets.capacity).toBe(60);
    const pid = await redisPid(redis.port);
    process.kill(pid, 'SIGSTOP');
    let outcomes: { code: number | undefined; details: string; ms: number }[];
    const timed = (client: string) => {
      const started = performance.now();
      return get(client, 60).then(
        () => ({ code: undefined, details: 'answered', ms: performance.now() - started }),
        (err: grpc.ServiceError) => ({ code: err.code, details: err.details, ms: performance.now() - started }),
      );
    };
    try {
      // Five asks go out in one batch that stalls; two more queue behind it half a bound later and are due
      // then, each by its own deadline (one watchdog per resource, re-armed after the first five).
      const first = Promise.all(['b', 'c', 'd', 'e', 'f'].map(timed));
      await new Promise((resolve) => setTimeout(resolve, MAX_WAIT_MS / 2));
      const later = Promise.all(['g', 'h'].map(timed));
      outcomes = [...(await first), ...(await later)];
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    for (const o of outcomes) {
      expect(o.code).toBe(grpc.status.UNAVAILABLE);
      expect(o.details).toMatch(/capacity state of api in Redis/);
      // All seven by the bound (they queue behind one stalled decision, yet none waits longer), with room for
      // a loaded machine; far below the 20 s deadline and the 11 s command timeout the old code waited per call.
      expect(o.ms).toBeGreaterThanOrEqual(MAX_WAIT_MS - 50);
      expect(o.ms).toBeLessThan(MAX_WAIT_MS + 3000);
    }
    // Redis answers again: decisions go on, a's lease is still counted, nothing is over-granted. (The stalled
    // batch is written when Redis wakes: its clients hold leases they never heard of until they ask again or
    // the leases expire, as docs/capacity.md says.)
    await eventually(async () => (await get('b', 60)).response[0]!.gets.capacity >= 0, {
      what: 'a decision after SIGCONT',
      timeoutMs: 15_000,
      intervalMs: 100,
    });
    const shown = (await (await fetch(`${service.httpBase}/capacity`)).json()) as {
      resources: { resource_id: string; sum_has: number; clients: { client: string; has: number }[] }[];
    };
    const api = shown.resources.find((r) => r.resource_id === 'api')!;
    expect(api.clients.find((c) => c.client === 'a')?.has).toBe(60);
    expect(api.sum_has).toBeLessThanOrEqual(100 + 1e-9);
  });

  it('stopped: calls fail at once with UNAVAILABLE naming Redis; restarted (empty), decisions resume on the new state', async () => {
    await redis.stopRedis();
    const started = performance.now();
    const err = await get('a', 60).then(
      () => undefined,
      (e: grpc.ServiceError) => e,
    );
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toMatch(/capacity state of api in Redis unavailable/);
    expect(performance.now() - started).toBeLessThan(MAX_WAIT_MS + 3000);
    await redis.restart();
    // The restarted server is empty (no persistence): the state began again, a gets what it wants.
    await eventually(
      async () => {
        try {
          return (await get('a', 70)).response[0]!.gets.capacity === 70;
        } catch {
          return false;
        }
      },
      { what: 'a decision after the restart', timeoutMs: 20_000, intervalMs: 200 },
    );
    expect((await get('b', 60)).response[0]!.gets.capacity).toBe(30);
  });
});
