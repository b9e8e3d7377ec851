/**
 * The failure modes through the real service, in-process, against a real redis-server that is stopped and
 * restarted: gRPC health follows Redis only with FAILURE_MODE=closed, /readyz and "ratelimit.store" always; each mode
 * answers as documented while Redis is down; fallbacks are counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = { 'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 4}\n' };

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

const ready = async (t: TestService) => (await fetch(`${t.httpBase}/readyz`)).status === 200;

async function withService(mode: 'open' | 'closed' | 'local', body: (t: TestService, c: RlsTestClient) => Promise<void>): Promise<void> {
  // A healthy Redis call must decide, not time out: at load 24 a call took more than the 100 ms default
  // REDIS_COMMAND_TIMEOUT_MS (the first answer fell to FAILURE_MODE=closed: remaining 0). With the caller's
  // deadline bounding Redis calls (DECISION_MAX_WAIT_MS) the setting only backs the health probe, where 2 s
  // is as harmless.
  const t = await startTestService(RULES, {
    backend: 'redis',
    redisUrl: redis.url,
    failureMode: mode,
    expectedReplicas: 2,
    cacheKeyPrefix: `rl-${mode}:`,
    redisCommandTimeoutMs: 2000,
  });
  const client = new RlsTestClient(t.grpcAddress);
  try {
    await eventually(() => ready(t), { timeoutMs: 15_000, what: 'the store to decide' });
    await body(t, client);
  } finally {
    client.close();
    await t.close();
    await redis.restart().catch(() => {}); // leave Redis up for the next test
  }
}

// What is proven here is the answer each mode gives, not its speed (test/e2e/deadlines.test.ts and
// redis-paused.test.ts prove the deadlines): a stopped Redis refuses at once (no offline queue), so a generous
// deadline costs nothing when idle, and at load 20 a 200 ms one expired in the test process's own gRPC client.
const ask = (c: RlsTestClient, user: string) => c.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: user }] }] }, 3000);

describe('failure modes with Redis stopped', () => {
  it('closed: rejects while Redis is down, reports NOT_SERVING / 503, and recovers', async () => {
    await withService('closed', async (t, c) => {
      expect((await ask(c, 'a')).statuses[0]!.limit_remaining).toBe(3);
      await redis.stopRedis();
      await eventually(async () => (await c.healthCheck('')).status === 'NOT_SERVING');
      expect(await ready(t)).toBe(false);
      const down = await ask(c, 'a');
      expect(down.overall_code).toBe('OVER_LIMIT');
      expect(down.response_headers_to_add).toContainEqual(expect.objectContaining({ key: 'retry-after', value: '60' }));
      await redis.restart();
      await eventually(async () => (await c.healthCheck('')).status === 'SERVING');
      expect(await ready(t)).toBe(true);
      await eventually(async () => (await ask(c, 'b')).statuses[0]!.limit_remaining === 3);
      const metrics = await (await fetch(`${t.httpBase}/metrics`)).text();
      expect(metrics).toMatch(/ratelimit_store_fallbacks_total\{mode="closed"\} [1-9]/);
    });
  });

  it('open: admits while Redis is down, while gRPC health, /readyz and ratelimit.store tell the store is down', async () => {
    await withService('open', async (t, c) => {
      await redis.stopRedis();
      await eventually(async () => (await c.healthCheck('ratelimit.store')).status === 'NOT_SERVING');
      expect((await c.healthCheck('')).status).toBe('NOT_SERVING');
      expect((await fetch(`${t.httpBase}/healthcheck`)).status).toBe(200); // this replica still answers
      for (let i = 0; i < 6; i++) expect((await ask(c, 'a')).overall_code).toBe('OK');
      const readyz = await fetch(`${t.httpBase}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.text()).toMatch(/^NOT READY: store: not connected/);
    });
  });

  it('local: decides in-process at limit ÷ EXPECTED_REPLICAS while Redis is down', async () => {
    await withService('local', async (_t, c) => {
      await redis.stopRedis();
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push((await ask(c, 'a')).overall_code);
      expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT']); // 4 ÷ 2 replicas = 2
    });
  });
});
