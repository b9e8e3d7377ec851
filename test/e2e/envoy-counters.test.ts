/**
 * REDIS_KEY_FORMAT=envoy: the real envoyproxy/ratelimit binary (bench/lib/reference.ts finds it) and our
 * service share one redis-server and count into the same keys, in the reference's layout
 * (<prefix><domain>_<key>_<value>_<window start s>, a plain integer counter). Real time (the reference has
 * no other clock), so the window is an hour and the test retries once if an hour boundary falls inside it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceCannotRun, startReference } from '../../bench/lib/reference.js';
import type { Target } from '../../bench/lib/servers.js';
import { systemClock } from '../../src/vocab/clock.js';
import { eventually } from '../support/eventually.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const REFERENCE_RULES = `domain: edge
descriptors:
  - key: remote_address
    rate_limit:
      unit: hour
      requests_per_unit: 10
`;
// ours has one more rule the reference would refuse (it knows no algorithms)
const RULES = `${REFERENCE_RULES}  - key: plan
    rate_limit:
      unit: hour
      requests_per_unit: 10
      algorithm: token_bucket
`;

const cannotRun = referenceCannotRun();
if (cannotRun !== undefined) console.warn(`SKIPPED envoy-counters.test.ts: ${cannotRun}`);

let redis: RedisServer;
let reader: Redis;
let reference: Target | undefined;
let referenceClient: RlsTestClient;
let ours: TestService;
let oursClient: RlsTestClient;
let rulesDir: string;

describe.skipIf(cannotRun !== undefined)('REDIS_KEY_FORMAT=envoy shares counters with envoyproxy/ratelimit', () => {
  beforeAll(async () => {
    redis = await startRedis();
    reader = new Redis(redis.url, { lazyConnect: false, maxRetriesPerRequest: 1 });
    rulesDir = mkdtempSync(join(tmpdir(), 'rl-envoy-ref-'));
    writeFileSync(join(rulesDir, 'edge.yaml'), REFERENCE_RULES);
    reference = await startReference(rulesDir, `127.0.0.1:${redis.port}`);
    referenceClient = new RlsTestClient(reference.address);
    await eventually(async () => (await referenceClient.ask('edge', [[['probe', 'x']]])).overall_code === 'OK', {
      timeoutMs: 15_000,
      what: 'the reference to answer',
    });
    ours = await startTestService(
      { 'edge.yaml': RULES },
      { backend: 'redis', redisUrl: redis.url, redisKeyFormat: 'envoy', cacheKeyPrefix: '' },
      systemClock as never,
    );
    oursClient = new RlsTestClient(ours.grpcAddress);
  }, 40_000);

  afterAll(async () => {
    oursClient?.close();
    referenceClient?.close();
    await ours?.close();
    await reference?.stop();
    reader?.disconnect();
    await redis?.stop();
    if (rulesDir !== undefined) rmSync(rulesDir, { recursive: true, force: true });
  });

  const hourStart = (): number => Math.floor(Date.now() / 3_600_000) * 3_600;

  it('interleaved requests count into one key, in the reference layout, and either side sees the other', async () => {
    for (let attempt = 0; ; attempt++) {
      const start = hourStart();
      const ip = `10.9.${process.pid & 255}.${attempt}`;
      const key = `edge_remote_address_${ip}_${start}`;
      const ask = (client: RlsTestClient) => client.ask('edge', [[['remote_address', ip]]]);
      const seen: [string, string, number][] = [];
      for (const [who, client] of [
        ['ref', referenceClient],
        ['ref', referenceClient],
        ['ours', oursClient],
        ['ref', referenceClient],
        ['ours', oursClient],
        ['ours', oursClient],
      ] as const) {
        const r = await ask(client);
        seen.push([who, r.overall_code, r.statuses[0]!.limit_remaining]);
      }
      if (hourStart() !== start && attempt === 0) continue; // an hour boundary fell inside: once more
      expect(seen).toEqual([
        ['ref', 'OK', 9],
        ['ref', 'OK', 8],
        ['ours', 'OK', 7],
        ['ref', 'OK', 6],
        ['ours', 'OK', 5],
        ['ours', 'OK', 4],
      ]);
      expect(await reader.get(key)).toBe('6');
      const ttl = await reader.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(3_600 + 300); // ours: the unit; the reference: the unit + up to 300 s jitter

      // ours takes the rest; the reference sees it over
      for (let i = 0; i < 4; i++) expect((await ask(oursClient)).overall_code).toBe('OK');
      expect((await ask(oursClient)).overall_code).toBe('OVER_LIMIT');
      expect(await reader.get(key)).toBe('10'); // our rejection added nothing
      expect((await ask(referenceClient)).overall_code).toBe('OVER_LIMIT');
      expect(await reader.get(key)).toBe('11'); // the reference counts the hits it rejects
      expect((await ask(oursClient)).statuses[0]).toMatchObject({ code: 'OVER_LIMIT', limit_remaining: 0 });
      return;
    }
  });

  it('other algorithms keep native keys', async () => {
    await oursClient.ask('edge', [[['plan', `gold-${process.pid}`]]]);
    const keys = await reader.keys(`*plan*gold-${process.pid}*`);
    expect(keys).toEqual([`{edge|plan=gold-${process.pid}}:token_bucket:3600000`]);
  });
});
