/**
 * Two of our services on BACKEND=redis (one real redis-server), asked in turn, against the real Doorman server:
 * the same request sequences get the same grants round by round, though every step goes to the other replica
 * than the one before (so each decides on a copy it caught up from the other's writes).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/vocab/clock.js';
import { capacityCaller, doormanTool, startDoorman, type CapacityCaller, type DoormanServer } from '../support/capacity-peers.js';
import { close, randomSequence, sendStep, type Step } from '../support/capacity-sequences.js';
import { startRedis } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const RESOURCES = `resources:
  - identifier_glob: fair*
    capacity: 120
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: prop*
    capacity: 120
    algorithm: {kind: PROPORTIONAL_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: STATIC, lease_length: 600, refresh_interval: 15, learning_mode_duration: 0}
`;

describe.runIf(doormanTool('doorman') !== undefined)('capacity on Redis, two replicas in turn, against the real Doorman', () => {
  let doorman: DoormanServer;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  const services: TestService[] = [];
  const ours: CapacityCaller[] = [];
  let theirs: CapacityCaller;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-redis-doorman-'));
    writeFileSync(join(dir, 'resources.yaml'), RESOURCES);
    doorman = await startDoorman(RESOURCES);
    theirs = capacityCaller(doorman.address);
    redis = await startRedis();
    for (let i = 0; i < 2; i++) {
      const s = await startTestService({}, { backend: 'redis', redisUrl: redis.url, capacityConfig: join(dir, 'resources.yaml') }, systemClock as never);
      services.push(s);
      ours.push(capacityCaller(s.grpcAddress));
    }
  });

  afterAll(async () => {
    theirs?.close();
    for (const c of ours) c.close();
    await Promise.all(services.map((s) => s.close()));
    await doorman?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function inTurn(steps: readonly Step[]): Promise<void> {
    const held = [new Map<string, number>(), new Map<string, number>()];
    for (const [i, step] of steps.entries()) {
      const want = await sendStep(theirs, step, held[0]!);
      const got = await sendStep(ours[i % 2]!, step, held[1]!);
      const where = `step ${i} (replica ${i % 2}): ${JSON.stringify(step)} doorman=${want.capacity}/${want.safe} ours=${got.capacity}/${got.safe}`;
      expect({ capacity: close(want.capacity, got.capacity), safe: close(want.safe, got.safe), refresh: got.refresh }, where).toEqual({
        capacity: true,
        safe: true,
        refresh: want.refresh,
      });
    }
  }

  for (const resource of ['fair', 'prop', 'static']) {
    it(`${resource}: random sequences with clients and intermediate servers`, async () => {
      await inTurn(randomSequence(`redis-${resource}`, `${resource}-clients`, 100));
      await inTurn(randomSequence(`redis-${resource}-srv`, `${resource}-servers`, 100, { servers: true }));
    });
  }
});
