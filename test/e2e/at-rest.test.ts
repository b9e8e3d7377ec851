/**
 * At rest a sidecar asks little of Redis: the health probe, the quota-share sync's read of its signal stream
 * (RLQS), and Redis TIME only now and then; health is read when asked rather than on a timer. Counted on a redis-server of
 * the test's own (INFO commandstats) while the real service, in-process, sits idle.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/app/start-service.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { testSettings } from '../support/service.js';

let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-rest-'));
  writeFileSync(join(dir, 'app.yaml'), 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 4}\n');
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Calls per command since the last CONFIG RESETSTAT. */
async function commandCalls(): Promise<Map<string, number>> {
  const info = await rawCommand(redis.port, ['INFO', 'commandstats']);
  return new Map([...info.matchAll(/^cmdstat_([\w|]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

it('at rest on Redis: TIME every 10 s, and the health probe and the quota-share read at most once a second each', async () => {
  const svc = await startService(testSettings({ configDir: dir, backend: 'redis', redisUrl: redis.url, cacheKeyPrefix: 'rest:' }), {
    clock: new FakeClock(1_700_000_000_000),
    log: createLogger({ level: 'error', format: 'text', write: () => undefined }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
  try {
    await rawCommand(redis.port, ['CONFIG', 'RESETSTAT']);
    const seconds = 2.5;
    await new Promise((r) => setTimeout(r, seconds * 1000)); // real timers at rest are what is counted
    const calls = await commandCalls();
    // Redis's clock: a reading with a round trip under 20 ms is kept 10 s.
    expect(calls.get('time') ?? 0).toBeLessThanOrEqual(1);
    const total = [...calls].filter(([name]) => name !== 'info' && name !== 'config|resetstat').reduce((sum, [, n]) => sum + n, 0);
    expect(total).toBeLessThanOrEqual(3 * Math.ceil(seconds) + 2);
  } finally {
    await svc.close();
  }
});
