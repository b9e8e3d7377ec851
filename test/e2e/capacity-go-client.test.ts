/**
 * Doorman's own Go client (doorman_client, which asks with priority 0) after other clients (priority 1) have run
 * rounds of get and release on STATIC, FAIR_SHARE and PROPORTIONAL_SHARE resources: it prints what the real
 * Doorman prints after the same sequence, on the memory store and on Redis. Priorities are ignored by every
 * algorithm, as by Doorman's.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/vocab/clock.js';
import { capacityCaller, doormanTool, startDoorman, type CapacityCaller, type DoormanServer } from '../support/capacity-peers.js';
import { startRedis } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);
const CONFIG = `resources:
  - identifier_glob: static
    capacity: 50
    algorithm: {kind: STATIC, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: fair
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: prop
    capacity: 100
    algorithm: {kind: PROPORTIONAL_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: "*"
    capacity: 1000
    algorithm: {kind: FAIR_SHARE, lease_length: 600, refresh_interval: 5, learning_mode_duration: 0}
`;

const available = doormanTool('doorman') !== undefined && doormanTool('doorman_client') !== undefined;

/** Three clients ask in rounds, one releases, the other two ask again for more, one asks for a catch-all resource. */
async function sequence(caller: CapacityCaller): Promise<void> {
  const get = (client: string, resource: string, wants: number) =>
    caller.call('GetCapacity', { client_id: client, resource: [{ resource_id: resource, priority: 1, wants }] });
  for (let round = 0; round < 2; round++) {
    for (const resource of ['static', 'fair', 'prop']) {
      await get('c1', resource, 50);
      await get('c2', resource, 30);
      await get('c3', resource, 20);
    }
  }
  await caller.call('ReleaseCapacity', { client_id: 'c3', resource_id: ['static', 'fair', 'prop'] });
  for (const resource of ['static', 'fair', 'prop']) {
    await get('c1', resource, 60);
    await get('c2', resource, 40);
  }
  await get('c1', 'anything-else', 10);
}

async function goClient(address: string, resource: string): Promise<string> {
  const { stdout } = await run(doormanTool('doorman_client')!, [`--server=${address}`, `--resource=${resource}`, '--wants=30', '--client_id=go-client'], {
    timeout: 20_000,
  });
  return stdout.trim();
}

describe.runIf(available)("Doorman's Go client (priority 0) after a sequence of priority-1 clients", () => {
  let doorman: DoormanServer;
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let dir: string;
  const services: TestService[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-go-'));
    writeFileSync(join(dir, 'resources.yaml'), CONFIG);
    redis = await startRedis();
    doorman = await startDoorman(CONFIG);
    services.push(await startTestService({}, { capacityConfig: join(dir, 'resources.yaml') }, systemClock as never));
    services.push(await startTestService({}, { capacityConfig: join(dir, 'resources.yaml'), backend: 'redis', redisUrl: redis.url }, systemClock as never));
    for (const address of [doorman.address, ...services.map((s) => s.grpcAddress)]) {
      const caller = capacityCaller(address);
      try {
        await sequence(caller);
      } finally {
        caller.close();
      }
    }
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.close()));
    await doorman?.close();
    await redis?.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('prints what Doorman prints on STATIC (30: min(wants, capacity) whatever others hold), FAIR_SHARE and PROPORTIONAL_SHARE', async () => {
    for (const resource of ['static', 'fair', 'prop']) {
      const theirs = await goClient(doorman.address, resource);
      if (resource === 'static') expect(theirs).toBe('30');
      for (const [i, s] of services.entries()) expect(await goClient(s.grpcAddress, resource), `${resource} on ${i === 0 ? 'memory' : 'redis'}`).toBe(theirs);
    }
  });
});
