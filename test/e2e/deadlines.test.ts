/**
 * Answers arrive before the caller's gRPC deadline while Redis stalls (a real redis-server paused with
 * SIGSTOP: connected, but silent), as Envoy calls us: concurrent calls with a 20 ms deadline on one
 * connection, to `ratelimit serve` running as its own process. The margin kept before the deadline is
 * measured (server/deadline-margin.ts); answers that are late all the same are counted in
 * ratelimit_grpc_late_answers_total.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawCommand, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService } from '../support/service-process.js';
import { startTestService } from '../support/service.js';

const RULES = { 'app.yaml': 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000000}\n' };

let redis: RedisServer;
let redisPid: number;
beforeAll(async () => {
  redis = await startRedis();
  redisPid = Number(/process_id:(\d+)/.exec(await rawCommand(redis.port, ['INFO', 'server']))![1]);
});
afterAll(async () => {
  process.kill(redisPid, 'SIGCONT');
  await redis.stop();
});

async function paused<T>(body: () => Promise<T>): Promise<T> {
  process.kill(redisPid, 'SIGSTOP');
  try {
    return await body();
  } finally {
    process.kill(redisPid, 'SIGCONT');
  }
}

const ask = (client: RlsTestClient, user: string, timeoutMs: number) => client.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: user }] }] }, timeoutMs);

async function lateAnswers(httpBase: string): Promise<number> {
  const text = await (await fetch(`${httpBase}/metrics`)).text();
  return Number(/ratelimit_grpc_late_answers_total\{method="ShouldRateLimit"\} (\d+)/.exec(text)?.[1] ?? 0);
}

describe('deadlines under a Redis stall', () => {
  it('answers ≥ 99 % of concurrent 20 ms calls in time while Redis is paused, and counts the late ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-deadlines-'));
    writeFileSync(join(dir, 'app.yaml'), RULES['app.yaml']);
    const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, FAILURE_MODE: 'open', LOCAL_CACHE_SIZE: '0' });
    const client = new RlsTestClient(service.grpcAddress);
    try {
      for (let i = 0; i < 20; i++) await ask(client, 'warm', 1000);
      const calls = 400;
      const outcome = await paused(async () => {
        // Open loop, as Envoy sends: one call every 5 ms, whatever the answers (about 4 in flight).
        const results: Promise<grpc.status>[] = [];
        for (let i = 0; i < calls; i++) {
          results.push(ask(client, `u${i % 50}`, 20).then(() => grpc.status.OK, (err: grpc.ServiceError) => err.code));
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
        return Promise.all(results);
      });
      const inTime = outcome.filter((c) => c === grpc.status.OK).length;
      const late = outcome.filter((c) => c === grpc.status.DEADLINE_EXCEEDED).length;
      const counted = await lateAnswers(`http://${service.httpAddress}`);
      console.log(`deadlines: ${inTime}/${calls} answered in time, ${late} DEADLINE_EXCEEDED at the client, ${counted} counted late by the server`);
      expect(inTime + late).toBe(calls); // nothing but answers and misses
      expect(inTime / calls).toBeGreaterThanOrEqual(0.99);
    } finally {
      client.close();
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts an answer written after the deadline', async () => {
    const t = await startTestService(RULES, { backend: 'redis', redisUrl: redis.url, failureMode: 'open', localCacheSize: 0 });
    const client = new RlsTestClient(t.grpcAddress);
    try {
      await ask(client, 'warm', 1000);
      const before = await lateAnswers(t.httpBase);
      // Once the call is being decided, block the event loop past its deadline, as a long GC pause or a
      // CPU-starved pod would: the answer can only be written late.
      const limiter = t.service.limiter;
      const decide = limiter.decide.bind(limiter);
      limiter.decide = (request, options) => {
        const decision = decide(request, options);
        const until = performance.now() + 60;
        while (performance.now() < until);
        return decision;
      };
      await paused(() => ask(client, 'blocked', 30).catch(() => undefined));
      expect(await lateAnswers(t.httpBase)).toBe(before + 1);
      // The gRPC-layer duration saw the answered calls (the late one only if grpc-js had not yet cut it).
      const text = await (await fetch(`${t.httpBase}/metrics`)).text();
      expect(text).toMatch(/ratelimit_grpc_request_duration_seconds_count\{method="ShouldRateLimit"\} [12]\n/);
    } finally {
      client.close();
      await t.close();
    }
  });
});
