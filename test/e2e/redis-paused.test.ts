/**
 * Through the real service: redis-server is stopped with SIGSTOP while 60 requests on a
 * quota of 100 are rejected by FAILURE_MODE=closed before their gRPC deadline; after SIGCONT their queued
 * script calls run and must refuse (expired), so the next request sees 98 left (not 38).
 *
 * The service runs in this process, so its answer at `deadline - DEADLINE_MARGIN_MS` waits on the same event
 * loop as the test's client: at load 20 on 2 cores that loop lagged 300 ms and more, and a 600 ms deadline with
 * a 200 ms margin expired in the client before the service answered. The margin is 1.2 s of a 2.5 s deadline
 * (4x the lag seen); three waves of twenty keep the 60 queued calls the check counts. The client's command
 * timeout (REDIS_COMMAND_TIMEOUT_MS, or above DECISION_MAX_WAIT_MS where the caller's deadline bounds calls) must
 * outlast the three waves, else the first wave's replies are dropped uncounted: 20 s.
 */
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures.js';
import { RlsTestClient } from '../support/rls-client.js';
import { rawCommand } from '../support/redis.js';
import { startTestService } from '../support/service.js';

const RULES = { 'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n' };

describe('Redis paused with SIGSTOP', () => {
  it('never counts the requests FAILURE_MODE=closed rejected meanwhile', async ({ redis }) => {
    const pid = Number(/process_id:(\d+)/.exec(await rawCommand(redis.port, ['INFO', 'server']))?.[1]);
    expect(pid).toBeGreaterThan(0);
    const t = await startTestService(RULES, {
      backend: 'redis',
      redisUrl: redis.url,
      failureMode: 'closed',
      redisCommandTimeoutMs: 20_000,
      deadlineMarginMs: 1200,
    });
    const c = new RlsTestClient(t.grpcAddress);
    const ask = (timeoutMs: number) => c.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: 'u' }] }] }, timeoutMs);
    try {
      expect((await ask(10_000)).statuses[0]!.limit_remaining).toBe(99); // the first call also connects: seconds at load 20
      process.kill(pid, 'SIGSTOP');
      const answers = [];
      try {
        // Three waves of twenty concurrent requests: each wave is answered by the failure mode at its deadline.
        for (let wave = 0; wave < 3; wave++) answers.push(...(await Promise.all(Array.from({ length: 20 }, () => ask(2500)))));
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      expect(answers.every((a) => a.overall_code === 'OVER_LIMIT')).toBe(true);
      // Sent after SIGCONT on the same connection, behind the 60 queued calls.
      expect((await ask(5000)).statuses[0]!.limit_remaining).toBe(98);
      const metrics = await (await fetch(`${t.httpBase}/metrics`)).text();
      expect(metrics).toMatch(/^ratelimit_redis_expired_calls_total 60$/m);
      expect(metrics).toMatch(/^ratelimit_redis_late_commits_total 0$/m);
    } finally {
      c.close();
      await t.close();
    }
  });
});
