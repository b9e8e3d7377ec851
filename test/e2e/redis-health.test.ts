/**
 * Health surfaces through the real service (in-process, real gRPC and HTTP) against a real redis-server
 * whose ACL user may not run scripts, or whose password is wrong: every decision fails, so /readyz is 503
 * naming the cause, ratelimit_store_ready is 0, gRPC "ratelimit.store" is NOT_SERVING, and with
 * FAILURE_MODE=closed the RLS health is NOT_SERVING; the cause is logged at error level; all recover once
 * Redis accepts. REDIS_STARTUP=fail ends start-up with the cause instead.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/app/start-service.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Settings } from '../../src/settings/settings.js';
import { eventually } from '../support/eventually.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { testSettings } from '../support/service.js';

const RULES = 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 4}\n';

let redis: RedisServer;
let dir: string;
beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-health-rules-'));
  writeFileSync(join(dir, 'app.yaml'), RULES);
});
afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

function start(overrides: Partial<Settings>, lines: string[]) {
  return startService(testSettings({ configDir: dir, backend: 'redis', redisConnectTimeoutMs: 300, ...overrides }), {
    clock: new FakeClock(1_700_000_000_000),
    log: createLogger({ level: 'warn', format: 'text', write: (line) => lines.push(line) }),
    metrics: createMetrics({ defaultMetrics: false }),
  });
}

const readyz = async (port: number) => {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, text: await res.text() };
};
const gauge = async (port: number) => /^ratelimit_store_ready (\d)/m.exec(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())?.[1];

describe('Redis connection log lines', () => {
  it('"Redis connection ready" is good news: INFO, not WARN', async () => {
    const lines: string[] = [];
    const svc = await startService(testSettings({ configDir: dir, backend: 'redis', redisUrl: redis.url, cacheKeyPrefix: 'log:' }), {
      clock: new FakeClock(1_700_000_000_000),
      log: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) }),
      metrics: createMetrics({ defaultMetrics: false }),
    });
    await svc.close();
    const ready = lines.map((l) => JSON.parse(l) as { level: string; msg: string }).filter((l) => l.msg === 'Redis connection ready');
    expect(ready.length).toBeGreaterThan(0);
    expect(ready.every((l) => l.level === 'info')).toBe(true);
  });
});

describe('health follows whether the store decides', () => {
  it('ACL user without EVAL/EVALSHA (default FAILURE_MODE=open): 503, gauge 0, store and RLS NOT_SERVING, error log; all recover on grant', async () => {
    await rawCommand(redis.port, ['ACL', 'SETUSER', 'rl', 'on', '>pw', '~*', '+@all', '-eval', '-evalsha', '-eval_ro', '-evalsha_ro']);
    const lines: string[] = [];
    const svc = await start({ redisUrl: `redis://rl:pw@127.0.0.1:${redis.port}`, failureMode: 'open', cacheKeyPrefix: 'acl:' }, lines);
    const client = new RlsTestClient(`127.0.0.1:${svc.grpcPort}`);
    try {
      const r = await readyz(svc.httpPort);
      expect(r.status).toBe(503);
      expect(r.text).toMatch(/^NOT READY: store: NOPERM/);
      await eventually(async () => (await gauge(svc.httpPort)) === '0', { what: 'gauge 0' });
      expect((await client.healthCheck('ratelimit.store')).status).toBe('NOT_SERVING');
      expect((await client.healthCheck('')).status).toBe('NOT_SERVING');
      expect((await client.healthCheck('envoy.service.ratelimit.v3.RateLimitService')).status).toBe('NOT_SERVING');
      expect(svc.health.canAnswer()).toBe(true);
      expect(svc.health.storeProblem()).toMatch(/NOPERM/);
      expect(lines.some((l) => / ERROR .*NOPERM/.test(l))).toBe(true);

      await rawCommand(redis.port, ['ACL', 'SETUSER', 'rl', '+eval', '+evalsha']);
      await eventually(async () => (await readyz(svc.httpPort)).status === 200, { what: '/readyz 200 after the grant', timeoutMs: 5000 });
      await eventually(async () => (await client.healthCheck('')).status === 'SERVING', { what: 'RLS SERVING' });
      expect((await client.healthCheck('ratelimit.store')).status).toBe('SERVING');
      await eventually(async () => (await gauge(svc.httpPort)) === '1', { what: 'gauge 1' });
      const answer = await client.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: 'u' }] }] }, 500);
      expect(answer.statuses[0]!.limit_remaining).toBe(3);
    } finally {
      client.close();
      await svc.close();
    }
  });

  it('wrong password: serves by FAILURE_MODE (open) and says WRONGPASS; REDIS_STARTUP=fail ends start-up with it', async () => {
    const locked = await startRedis();
    try {
      await rawCommand(locked.port, ['CONFIG', 'SET', 'requirepass', 'secret']);
      const url = `redis://:wrong@127.0.0.1:${locked.port}`;
      const lines: string[] = [];
      const svc = await start({ redisUrl: url, failureMode: 'open' }, lines);
      const client = new RlsTestClient(`127.0.0.1:${svc.grpcPort}`);
      try {
        const r = await readyz(svc.httpPort);
        expect(r.status).toBe(503);
        expect(r.text).toMatch(/WRONGPASS/);
        expect((await client.healthCheck('')).status).toBe('NOT_SERVING'); // answers are FAILURE_MODE's, not decisions
        expect((await client.healthCheck('ratelimit.store')).status).toBe('NOT_SERVING');
        expect(lines.some((l) => / ERROR .*WRONGPASS/.test(l))).toBe(true);
      } finally {
        client.close();
        await svc.close();
      }
      await expect(start({ redisUrl: url, redisStartup: 'fail', redisStartupTimeoutMs: 500 }, [])).rejects.toThrow(/REDIS_STARTUP=fail.*WRONGPASS/);
      // A wrong password is not transient: REDIS_STARTUP=fail fails at once, not after REDIS_STARTUP_TIMEOUT_MS
      // (it waited the whole 10 s). The bound is half the timeout: a connect and one AUTH take milliseconds.
      const began = performance.now();
      await expect(start({ redisUrl: url, redisStartup: 'fail', redisStartupTimeoutMs: 10_000 }, [])).rejects.toThrow(
        /REDIS_STARTUP=fail\): Redis refuses: WRONGPASS/,
      );
      expect(performance.now() - began).toBeLessThan(5_000);
      // And so does a user without the scripts' permissions (NOPERM), with REDIS_STARTUP=wait too (it then serves
      // by FAILURE_MODE at once, saying why).
      await rawCommand(redis.port, ['ACL', 'SETUSER', 'noeval', 'on', '>pw', '~*', '+@all', '-eval', '-evalsha', '-eval_ro', '-evalsha_ro']);
      const noeval = `redis://noeval:pw@127.0.0.1:${redis.port}`;
      const began2 = performance.now();
      await expect(start({ redisUrl: noeval, redisStartup: 'fail', redisStartupTimeoutMs: 10_000 }, [])).rejects.toThrow(
        /REDIS_STARTUP=fail\): Redis refuses: .*NOPERM/,
      );
      expect(performance.now() - began2).toBeLessThan(5_000);
    } finally {
      await locked.stop();
    }
  });
});
