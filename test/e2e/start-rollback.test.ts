/**
 * A start that fails at its last step (the admin HTTP port is taken) closes everything started before it, on
 * real sockets: the gRPC port is free again, and the counters' and the capacity service's Redis connections
 * are closed. The error is the one that stopped the start, and no closer failed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, StartupError } from '../../src/app/start-service.js';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { eventually } from '../support/eventually.js';
import { freePort, rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { testSettings } from '../support/service.js';

const listen = (server: Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
const close = (server: Server) => new Promise((resolve) => server.close(resolve));
/** Clients connected to the Redis under test, this probe's own connection left out. */
const clients = async (redis: RedisServer) => (await rawCommand(redis.port, ['CLIENT', 'LIST'])).split('\n').filter((l) => l.includes('addr=')).length - 1;

let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-rollback-'));
  mkdirSync(join(dir, 'rules'));
  writeFileSync(join(dir, 'rules', 'rules.yaml'), 'domain: web\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 2}\n');
  writeFileSync(
    join(dir, 'resources.yaml'),
    'resources:\n  - identifier_glob: "*"\n    capacity: 100\n    algorithm: {kind: FAIR_SHARE, lease_length: 60, refresh_interval: 5, learning_mode_duration: 0}\n',
  );
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('closes the gRPC port and both Redis connections when the admin port cannot be bound', async () => {
  const taken = createServer();
  const httpPort = await freePort();
  await listen(taken, httpPort);
  const grpcPort = await freePort();
  const warnings: string[] = [];
  const log = createLogger({ level: 'warn', format: 'json', write: (line) => void warnings.push(line) });
  try {
    const settings = testSettings({
      configDir: join(dir, 'rules'),
      configWatch: true,
      backend: 'redis',
      redisUrl: redis.url,
      capacityConfig: join(dir, 'resources.yaml'),
      grpcPort,
      httpPort,
    });
    const failed = await startService(settings, { log, metrics: createMetrics({ defaultMetrics: false }) }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(StartupError);
    expect((failed as Error).message).toMatch(new RegExp(`^cannot listen for HTTP on 127\\.0\\.0\\.1:${httpPort}: `));

    const again = createServer();
    await listen(again, grpcPort);
    await close(again);
    await eventually(async () => (await clients(redis)) === 0, { what: "the service's Redis connections to close", timeoutMs: 5000 });
    expect(warnings.filter((w) => w.includes('closing failed'))).toEqual([]);
  } finally {
    await close(taken);
  }
});
