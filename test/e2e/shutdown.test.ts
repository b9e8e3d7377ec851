/**
 * SIGTERM as Kubernetes sends it to `ratelimit serve`: NOT_SERVING at once on health Check and
 * Watch (and /readyz 503), calls still answered for SHUTDOWN_DRAIN_MS, then new calls refused while an in-flight call (held
 * up by a paused Redis) still finishes, and the process exits 0 within drain + grace.
 */
import * as grpc from '@grpc/grpc-js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';

const DRAIN_MS = 3000;
const GRACE_MS = 5000;
const dir = mkdtempSync(join(tmpdir(), 'rl-shutdown-'));
writeFileSync(join(dir, 'edge.yaml'), 'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n');

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('drains on SIGTERM: NOT_SERVING first, answers during the drain, refuses after, finishes in-flight calls, exits 0', async () => {
  const svc = await spawnService({
    CONFIG_DIR: dir,
    BACKEND: 'redis',
    REDIS_URL: redis.url,
    REDIS_COMMAND_TIMEOUT_MS: '8000',
    LOCAL_CACHE_SIZE: '0',
    SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
    SHUTDOWN_GRACE_MS: String(GRACE_MS),
  });
  const client = new RlsTestClient(svc.grpcAddress);
  const late = new RlsTestClient(svc.grpcAddress);
  try {
    expect((await client.ask('edge', [[['ip', 'a']]], 1)).overall_code).toBe('OK');
    const seen: string[] = [];
    const watch = client.healthWatch('');
    watch.on('data', (m: { status: string }) => seen.push(m.status));
    watch.on('error', () => {});
    await eventually(() => seen.includes('SERVING'), { what: 'Watch to report SERVING' });

    const exited = new Promise<{ code: number | null; at: number }>((resolve) => svc.child.once('exit', (code) => resolve({ code, at: Date.now() })));
    const t0 = Date.now();
    svc.child.kill('SIGTERM');

    await eventually(() => seen.includes('NOT_SERVING'), { timeoutMs: 1000, what: 'Watch to report NOT_SERVING' });
    expect((await client.healthCheck('')).status).toBe('NOT_SERVING');
    expect((await fetch(`http://${svc.httpAddress}/readyz`)).status).toBe(503);
    expect((await late.ask('edge', [[['ip', 'b']]], 1)).overall_code).toBe('OK');
    expect(Date.now() - t0).toBeLessThan(DRAIN_MS);

    // An in-flight call across the end of the drain: Redis holds every command for 4 s from now (past the drain's end).
    expect(await rawCommand(redis.port, ['CLIENT', 'PAUSE', '4000', 'ALL'])).toContain('OK');
    const inflight = client.ask('edge', [[['ip', 'c']]], 1).then((r) => ({ code: r.overall_code, at: Date.now() }));

    let refusedAt = 0;
    await eventually(
      async () => {
        try {
          await late.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'ip', value: 'd' }] }] }, 300);
          return false;
        } catch (err) {
          if ((err as grpc.ServiceError).code !== grpc.status.UNAVAILABLE) return false;
          refusedAt = Date.now();
          return true;
        }
      },
      { timeoutMs: DRAIN_MS + 3000, intervalMs: 50, what: 'new calls to be refused' },
    );
    expect(refusedAt - t0).toBeGreaterThanOrEqual(DRAIN_MS);

    const done = await inflight;
    expect(done.code).toBe('OK');
    expect(done.at - t0).toBeGreaterThan(DRAIN_MS);

    const exit = await exited;
    expect(exit.code).toBe(0);
    expect(exit.at - t0).toBeLessThan(DRAIN_MS + GRACE_MS);
  } finally {
    client.close();
    late.close();
    await svc.stop();
  }
}, 30_000);

it('a second SIGTERM ends the drain at once, and the process still exits 0', async () => {
  const svc = await spawnService({ CONFIG_DIR: dir, SHUTDOWN_DRAIN_MS: '30000', SHUTDOWN_GRACE_MS: '1000' });
  const client = new RlsTestClient(svc.grpcAddress);
  try {
    const exited = new Promise<{ code: number | null; at: number }>((resolve) => svc.child.once('exit', (code) => resolve({ code, at: Date.now() })));
    svc.child.kill('SIGTERM');
    await eventually(async () => (await client.healthCheck('')).status === 'NOT_SERVING', { what: 'NOT_SERVING', timeoutMs: 15_000 });
    const t1 = Date.now();
    svc.child.kill('SIGTERM');
    const exit = await exited;
    expect(exit.code).toBe(0);
    expect(exit.at - t1).toBeLessThan(5000);
  } finally {
    client.close();
    await svc.stop();
  }
}, 30_000);
