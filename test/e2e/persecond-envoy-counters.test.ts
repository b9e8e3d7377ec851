/**
 * REDIS_PERSECOND beside envoyproxy/ratelimit: the real reference binary and our service (REDIS_KEY_FORMAT=envoy)
 * on the same two redis-servers, with the same REDIS_PERSECOND settings: both count a `unit: second` limit in the
 * per-second Redis, into one key, and an hourly limit in the main one. Real time (the reference has no other
 * clock): a run that a second boundary falls into is repeated (at most 5 times).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFERENCE_START, referenceCannotRun, startReference } from '../../bench/lib/reference.js';
import type { Target } from '../../bench/lib/servers.js';
import { systemClock } from '../../src/vocab/clock.js';
import { eventually } from '../support/eventually.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 10}
`;

const cannotRun = referenceCannotRun();
if (cannotRun !== undefined) console.warn(`SKIPPED persecond-envoy-counters.test.ts: ${cannotRun}`);

let main: RedisServer;
let fast: RedisServer;
let mainReader: Redis;
let fastReader: Redis;
let reference: Target | undefined;
let referenceClient: RlsTestClient;
let ours: TestService;
let oursClient: RlsTestClient;
let rulesDir: string;

describe.skipIf(cannotRun !== undefined)('REDIS_PERSECOND shares per-second counters with envoyproxy/ratelimit', () => {
  beforeAll(async () => {
    [main, fast] = await Promise.all([startRedis(), startRedis()]);
    mainReader = new Redis(main.url, { maxRetriesPerRequest: 1 });
    fastReader = new Redis(fast.url, { maxRetriesPerRequest: 1 });
    rulesDir = mkdtempSync(join(tmpdir(), 'rl-envoy-ref-ps-'));
    writeFileSync(join(rulesDir, 'edge.yaml'), RULES);
    const perSecond = ['REDIS_PERSECOND=true', 'REDIS_PERSECOND_SOCKET_TYPE=tcp', `REDIS_PERSECOND_URL=127.0.0.1:${fast.port}`];
    reference = await startReference(rulesDir, `127.0.0.1:${main.port}`, REFERENCE_START, { env: perSecond });
    referenceClient = new RlsTestClient(reference.address);
    await eventually(async () => (await referenceClient.ask('edge', [[['probe', 'x']]])).overall_code === 'OK', {
      timeoutMs: 15_000,
      what: 'the reference to answer',
    });
    ours = await startTestService(
      { 'edge.yaml': RULES },
      {
        backend: 'redis',
        redisUrl: main.url,
        redisKeyFormat: 'envoy',
        cacheKeyPrefix: '',
        redisPerSecond: true,
        redisPerSecondUrl: `127.0.0.1:${fast.port}`,
      },
      systemClock as never,
    );
    oursClient = new RlsTestClient(ours.grpcAddress);
  }, 40_000);

  afterAll(async () => {
    oursClient?.close();
    referenceClient?.close();
    await ours?.close();
    await reference?.stop();
    mainReader?.disconnect();
    fastReader?.disconnect();
    await main?.stop();
    await fast?.stop();
    if (rulesDir !== undefined) rmSync(rulesDir, { recursive: true, force: true });
  });

  it('both count a per-second limit into one key of the per-second Redis, and an hourly one in the main Redis', async () => {
    for (let attempt = 0; ; attempt++) {
      const second = Math.floor(Date.now() / 1000);
      const ip = `10.7.${process.pid & 255}.${attempt}`;
      const remaining: number[] = [];
      for (const client of [referenceClient, oursClient, referenceClient, oursClient])
        remaining.push((await client.ask('edge', [[['remote_address', ip]]])).statuses[0]!.limit_remaining);
      if (Math.floor(Date.now() / 1000) !== second && attempt < 4) continue; // a second boundary fell inside
      expect(remaining).toEqual([9, 8, 7, 6]);
      const key = `edge_remote_address_${ip}_${second}`;
      expect(await fastReader.get(key)).toBe('4');
      expect(await mainReader.exists(key)).toBe(0);
      break;
    }
    const user = `u${process.pid}`;
    await referenceClient.ask('edge', [[['user', user]]]);
    await oursClient.ask('edge', [[['user', user]]]);
    const hourKey = `edge_user_${user}_${Math.floor(Date.now() / 3_600_000) * 3_600}`;
    expect(await mainReader.get(hourKey)).toBe('2');
    expect(await fastReader.exists(hourKey)).toBe(0);
  });
});
