/**
 * Through the real service: with config/example.yaml on Redis, six concurrent
 * Envoy-shaped requests (three with one descriptor, three with three, so several limit counts the process has
 * not used before) used to kill the process through ioredis auto-pipelining, in every FAILURE_MODE. Each must
 * be answered from Redis, and the service must keep answering. (An uncaught exception fails this run.)
 */
import { readFileSync } from 'node:fs';
import { describe, expect } from 'vitest';
import { it } from '../support/fixtures.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService } from '../support/service.js';

const EXAMPLE = readFileSync(new URL('../../config/example.yaml', import.meta.url), 'utf8');

describe.each(['open', 'closed', 'local'] as const)('FAILURE_MODE=%s', (mode) => {
  it('answers six concurrent requests with 1 and 3 descriptors from Redis, and keeps serving', async ({ redis }) => {
    const t = await startTestService({ 'example.yaml': EXAMPLE }, { backend: 'redis', redisUrl: redis.url, failureMode: mode, cacheKeyPrefix: `nk-${mode}:` });
    const c = new RlsTestClient(t.grpcAddress);
    try {
      const one = (i: number) => [[['remote_address', `10.1.0.${i}`]]];
      const three = (i: number) => [
        [['remote_address', `10.2.0.${i}`]],
        [
          ['generic_key', 'api'],
          ['user', `u${i}`],
        ],
        [['plan', 'free']],
      ];
      const answers = await Promise.all([1, 2, 3].flatMap((i) => [c.ask('edge', one(i)), c.ask('edge', three(i))]));
      for (const a of answers) expect(a.overall_code).toBe('OK');
      const fallbacks = (await (await fetch(`${t.httpBase}/metrics`)).text()).match(/^ratelimit_store_fallbacks_total\S* (\d+)/m);
      expect(fallbacks?.[1] ?? '0').toBe('0');
      expect((await c.ask('edge', one(9))).overall_code).toBe('OK');
    } finally {
      c.close();
      await t.close();
    }
  });
});
