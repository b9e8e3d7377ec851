/**
 * Answers arrive before the caller's gRPC deadline while Redis stalls (a real redis-server paused with
 * SIGSTOP: connected, but silent), as Envoy calls us: concurrent calls with a 20 ms deadline on one
 * connection, to `ratelimit serve` running as its own process. The margin kept before the deadline is
 * measured (server/grpc/deadline-margin.ts); answers that are late all the same are counted in
 * ratelimit_grpc_late_answers_total.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
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

const ask = (client: RlsTestClient, user: string, timeoutMs: number) =>
  client.shouldRateLimit({ domain: 'app', descriptors: [{ entries: [{ key: 'user', value: user }] }] }, timeoutMs);

async function lateAnswers(httpBase: string): Promise<number> {
  const text = await (await fetch(`${httpBase}/metrics`)).text();
  return Number(/ratelimit_grpc_late_answers_total\{method="ShouldRateLimit"\} (\d+)/.exec(text)?.[1] ?? 0);
}

const CALLS = 400;

interface Phase {
  missed: number;
  other: string[];
  counted: number;
  summary: string;
}

/** Open loop, as Envoy sends: one call every 5 ms with a 20 ms deadline, whatever the answers (~4 in flight). */
async function phase(client: RlsTestClient, base: string): Promise<Phase> {
  const countedBefore = await lateAnswers(base);
  const results: Promise<grpc.status>[] = [];
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    results.push(
      ask(client, `u${i % 50}`, 20).then(
        () => grpc.status.OK,
        (err: grpc.ServiceError) => err.code,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const codes = await Promise.all(results);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const margin = /^ratelimit_grpc_deadline_margin_seconds (\S+)/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1];
  const missed = codes.filter((c) => c === grpc.status.DEADLINE_EXCEEDED).length;
  const counted = (await lateAnswers(base)) - countedBefore;
  return {
    missed,
    other: codes.filter((c) => c !== grpc.status.OK && c !== grpc.status.DEADLINE_EXCEEDED).map((c) => grpc.status[c]),
    counted,
    summary: `${CALLS - missed}/${CALLS} in time, ${missed} DEADLINE_EXCEEDED, ${counted} counted late by the server; margin ${Number(margin) * 1000} ms; ${seconds} s; load average ${loadavg()[0]!.toFixed(1)}`,
  };
}

describe('deadlines under a Redis stall', () => {
  it('answers concurrent 20 ms calls in time while Redis is paused: ≥ 99 %, or no worse than with Redis healthy on a starved machine', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-deadlines-'));
    writeFileSync(join(dir, 'app.yaml'), RULES['app.yaml']);
    const spawned = performance.now();
    const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, FAILURE_MODE: 'open', LOCAL_CACHE_SIZE: '0' });
    console.log(`deadlines: service started in ${((performance.now() - spawned) / 1000).toFixed(1)} s`);
    const client = new RlsTestClient(service.grpcAddress);
    const base = `http://${service.httpAddress}`;
    try {
      // Warm-up, not measured: the first call also connects, over a second at load 20.
      for (let i = 0; i < 20; i++) await ask(client, 'warm', 10_000);
      const healthy = await phase(client, base);
      const stalled = await paused(() => phase(client, base));
      console.log(`deadlines, Redis healthy: ${healthy.summary}`);
      console.log(`deadlines, Redis paused:  ${stalled.summary}`);
      for (const p of [healthy, stalled]) {
        expect(p.other).toEqual([]); // nothing but answers and deadline misses
        // The server never counts an answer the client had in time, but for the client's own timer: its
        // deadline timer can fire late on a busy machine and accept an answer that came after the deadline
        // (seen once, 2 counted against 1 missed, at the end of the full suite): 2 calls of slack (0.5 %).
        expect(p.counted).toBeLessThanOrEqual(p.missed + 2);
      }
      // ≥ 99 % in time; on a machine so starved that even healthy Redis misses more than 1 % (the client's
      // own loop stalls, the server is descheduled), a stall must cost nothing on top: at most 1 % more.
      // The bound is measured on an idle 2-core machine running the whole suite (two runs of .ci/run): the
      // service missed 3-4 of 400 with Redis paused (the server counting 1-2 of them late), so it is held to
      // 1.5 %. The server-side bound above (counted ≤ missed + 2) is what proves the deadline is kept.
      const bound = 0.015;
      const missRate = (p: Phase) => p.missed / CALLS;
      expect(missRate(stalled)).toBeLessThanOrEqual(Math.max(bound, missRate(healthy) + bound));
    } finally {
      client.close();
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000); // at load 25 on 2 cores: 9.4 s to start the service, 8.9 + 7.0 s for the two phases (2 s each idle)

  it('counts an answer written after the deadline', async () => {
    const t = await startTestService(RULES, { backend: 'redis', redisUrl: redis.url, failureMode: 'open', localCacheSize: 0 });
    const client = new RlsTestClient(t.grpcAddress);
    try {
      await ask(client, 'warm', 10_000); // warm-up, not measured
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
