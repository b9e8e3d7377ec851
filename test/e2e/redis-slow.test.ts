/**
 * A Redis that is healthy but slower than REDIS_COMMAND_TIMEOUT_MS (100 ms) while the caller
 * waits seconds. The caller's deadline, not REDIS_COMMAND_TIMEOUT_MS, bounds the Redis call: every request
 * gets a real decision (3 admitted on a limit of 3, the rest rejected), none is answered by FAILURE_MODE=open,
 * and each is counted exactly once (no expired call, no late commit). Before the fix the client's 100 ms
 * command timeout answered all of them by the failure mode (admitted, and counted later when Redis resumed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { startTestService } from '../support/service.js';

const RULES = { 'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 3}\n' };
const PAUSE_MS = 400;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m === null ? 0 : Number(m[1]);
}

describe('Redis slower than REDIS_COMMAND_TIMEOUT_MS, within the caller deadline', () => {
  it('answers with real decisions, each counted once, none by FAILURE_MODE', async () => {
    const t = await startTestService(RULES, { backend: 'redis', redisUrl: redis.url, failureMode: 'open', redisCommandTimeoutMs: 100, localCacheSize: 0 });
    const c = new RlsTestClient(t.grpcAddress);
    const ask = () => c.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: 'slow' }] }] }, 10_000);
    try {
      await ask(); // connection and script warm: one hit of three
      // Every client command waits until the pause ends (PAUSE_MS > 100 ms, far below the 10 s deadline).
      await rawCommand(redis.port, ['CLIENT', 'PAUSE', String(PAUSE_MS), 'ALL']);
      const started = Date.now();
      const answers = await Promise.all(Array.from({ length: 5 }, () => ask()));
      expect(Date.now() - started).toBeGreaterThanOrEqual(PAUSE_MS - 50); // they really waited for Redis
      const codes = answers.map((a) => a.overall_code).sort();
      expect(codes).toEqual(['OK', 'OK', 'OVER_LIMIT', 'OVER_LIMIT', 'OVER_LIMIT']);
      // Counted once: Redis holds 3 hits, so the next request is rejected with nothing left.
      const after = await ask();
      expect(after.overall_code).toBe('OVER_LIMIT');
      expect(after.statuses[0]!.limit_remaining).toBe(0);
      const metrics = await (await fetch(`${t.httpBase}/metrics`)).text();
      expect(metric(metrics, 'ratelimit_store_fallbacks_total')).toBe(0);
      expect(metric(metrics, 'ratelimit_redis_expired_calls_total')).toBe(0);
      expect(metric(metrics, 'ratelimit_redis_late_commits_total')).toBe(0);
    } finally {
      c.close();
      await t.close();
    }
  });
});
