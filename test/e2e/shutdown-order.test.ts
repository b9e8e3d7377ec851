/**
 * What stays up through the shutdown's grace (an in-flight call held by a paused Redis past the drain's end):
 * rule changes are no longer taken (the rules watcher stopped with the drain), new gRPC calls are refused, the
 * admin port still answers (/readyz 503, /metrics), and the in-flight call is answered from the store that
 * closes last.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService } from '../../src/app/start-service.js';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { eventually } from '../support/eventually.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { testSettings } from '../support/service.js';

const RULES = 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n';
let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-shutdown-order-'));
  writeFileSync(join(dir, 'edge.yaml'), RULES);
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('keeps the admin port and the store through the grace, and takes no rule change after the drain', async () => {
  const settings = testSettings({
    configDir: dir,
    configWatch: true,
    configDebounceMs: 10,
    configPollIntervalMs: 20,
    backend: 'redis',
    redisUrl: redis.url,
    redisCommandTimeoutMs: 8000,
    localCacheSize: 0,
    shutdownDrainMs: 200,
    shutdownGraceMs: 8000,
  });
  const service = await startService(settings, {
    log: createLogger({ level: 'error', format: 'text', write: () => {} }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
  const address = `127.0.0.1:${service.grpcPort}`;
  const admin = `http://127.0.0.1:${service.httpPort}`;
  const client = new RlsTestClient(address);
  const late = new RlsTestClient(address);
  const version = service.rules.config.version;
  try {
    expect((await client.ask('edge', [[['ip', 'a']]], 1)).overall_code).toBe('OK');
    // Redis holds every command for 3 s: the call below is in flight across the drain's end.
    expect(await rawCommand(redis.port, ['CLIENT', 'PAUSE', '3000', 'ALL'])).toContain('OK');
    const inflight = client.ask('edge', [[['ip', 'b']]], 1);
    const closed = service.close();
    await eventually(
      () =>
        late.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'ip', value: 'c' }] }] }, 300).then(
          () => false,
          (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
        ),
      { timeoutMs: 3000, intervalMs: 20, what: 'new calls to be refused once the drain is over' },
    );
    // In the grace: a rules change is not taken (the watcher would see it within ~30 ms), the admin port answers.
    writeFileSync(join(dir, 'edge.yaml'), RULES.replace('1000', '5'));
    expect((await fetch(`${admin}/readyz`)).status).toBe(503);
    expect(await (await fetch(`${admin}/metrics`)).text()).toContain('ratelimit_config_reloads_total{result="success"} 0');
    expect((await inflight).overall_code).toBe('OK');
    await closed;
    expect(service.rules.config.version).toBe(version);
    expect(await service.metrics.registry.getSingleMetricAsString('ratelimit_config_reloads_total')).toContain(
      'ratelimit_config_reloads_total{result="success"} 0',
    );
  } finally {
    client.close();
    late.close();
    writeFileSync(join(dir, 'edge.yaml'), RULES);
    await service.close();
  }
}, 30_000);
