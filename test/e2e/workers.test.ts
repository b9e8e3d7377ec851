/**
 * WORKERS=N (src/app/workers.ts): N processes on the same gRPC and HTTP ports, sharing the Redis counters; the
 * memory store refused with a message naming the setting; SIGTERM stops every worker.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { spawnService } from '../support/service-process.js';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');
const dir = mkdtempSync(join(tmpdir(), 'rl-workers-'));
writeFileSync(join(dir, 'x.yaml'), 'domain: x\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 10}\n');
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('WORKERS', () => {
  it('refuses WORKERS > 1 with the memory store, naming both settings', async () => {
    const err = await promisify(execFile)(process.execPath, [BIN, 'serve'], {
      env: { ...process.env, CONFIG_DIR: dir, WORKERS: '2', GRPC_PORT: '0', HTTP_PORT: '0' },
    }).catch((e: { code: number; stderr: string }) => e);
    expect(err).toMatchObject({ code: 1 });
    expect((err as { stderr: string }).stderr).toContain('WORKERS=2 needs BACKEND=redis');
  });

  it('serves one set of limits from 2 workers on one port over Redis, and stops them all on SIGTERM', async () => {
    const svc = await spawnService({ CONFIG_DIR: dir, WORKERS: '2', BACKEND: 'redis', REDIS_URL: redis.url });
    // Connections are handed to the workers in turn: 6 connections reach both, and share the counter.
    const clients = Array.from({ length: 6 }, () => new RawRlsClient(svc.grpcAddress));
    try {
      for (let i = 0; i < 100 && (svc.stderr().match(/ratelimit-sidecar started/g) ?? []).length < 2; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const remaining: number[] = [];
      for (let i = 0; i < 12; i++) remaining.push((await clients[i % 6]!.call('x', [{ entries: [['user', 'shared']] }])).statuses[0]!.limitRemaining);
      expect(remaining).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0]);
      expect(svc.stderr().match(/ratelimit-sidecar started/g)).toHaveLength(2); // both workers had started before answering 12 calls
    } finally {
      for (const c of clients) c.close();
      await svc.stop();
    }
    expect(svc.child.exitCode).toBe(0);
  });
});
