/**
 * Throttling across replicas: three real server processes share one real redis-server; 300 concurrent
 * requests against a soft and against elastic rules give exact totals (the aggregate and the client counter
 * move in one script on a single node). Then /rules and /metrics show the throttling.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

// Day windows: nothing rolls over during the test.
const RULES = `domain: thr
descriptors:
  - key: soft
    rate_limit: {unit: day, requests_per_unit: 100, throttling: {soft: 10%}}
  - key: elastic_spare
    rate_limit: {unit: day, requests_per_unit: 20, algorithm: sliding_window_counter, throttling: {elastic: {capacity: 1000, max: 60}}}
  - key: elastic_tight
    rate_limit: {unit: day, requests_per_unit: 50, algorithm: sliding_window_log, throttling: {elastic: {capacity: 120, max: 200}}}
  - key: banned
    rate_limit: {unit: day, requests_per_unit: 3, ban: 1h, shares: {sheddable: 50%}}
  - key: warm
    rate_limit: {unit: day, requests_per_unit: 1000}
`;

interface Replica {
  service: ServiceProcess;
  client: RlsTestClient;
}
let redis: RedisServer;
let dir: string;
const replicas: Replica[] = [];

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-throttling-'));
  writeFileSync(join(dir, 'thr.yaml'), RULES);
  // A generous Redis command timeout: this test is about exact totals, and on a loaded 2-core machine a burst of
  // 300 can keep a reply past the 100 ms default (then FAILURE_MODE would answer; asserted to be 0 below).
  const env = { CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, FAILURE_MODE: 'closed', REDIS_COMMAND_TIMEOUT_MS: '5000' };
  const started = await Promise.all([0, 1, 2].map(() => spawnService(env)));
  for (const service of started) replicas.push({ service, client: new RlsTestClient(service.grpcAddress) });
  // Every replica ready and its script loaded before the concurrent bursts (a FAILURE_MODE answer would skew totals).
  for (const r of replicas) {
    const until = Date.now() + 10_000;
    while ((await fetch(`http://${r.service.httpAddress}/readyz`)).status !== 200 && Date.now() < until) await new Promise((res) => setTimeout(res, 50));
    expect((await r.client.ask('thr', [[['warm', 'up']]])).overall_code).toBe('OK');
  }
}, 60_000);

afterAll(async () => {
  for (const r of replicas) r.client.close();
  await Promise.all(replicas.map((r) => r.service.stop()));
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const spread = (n: number, entries: (i: number) => string[][]) =>
  Promise.all(Array.from({ length: n }, (_, i) => replicas[i % 3]!.client.ask('thr', [entries(i)])));

describe('throttling on three replicas sharing one Redis', () => {
  it('soft 10%: exactly 110 of 300 concurrent requests, the 10 above the limit marked', async () => {
    const responses = await spread(300, () => [['soft', 'x']]);
    expect(responses.filter((r) => r.overall_code === 'OK')).toHaveLength(110);
    const marked = responses.filter((r) => r.response_headers_to_add.some((h) => h.key === 'x-ratelimit-soft-exceeded'));
    expect(marked).toHaveLength(10);
    for (const r of marked) expect(r.statuses[0]).toMatchObject({ code: 'OK', limit_remaining: 0 });
  });

  it('elastic with spare capacity: each of 3 clients gets exactly its max of 60 (300 concurrent requests)', async () => {
    const responses = await spread(300, (i) => [['elastic_spare', `c${i % 3}`]]);
    for (let c = 0; c < 3; c++)
      expect(
        responses.filter((r, i) => i % 3 === c && r.overall_code === 'OK'),
        `client c${c}`,
      ).toHaveLength(60);
    const borrowed = responses.filter((r) => r.response_headers_to_add.some((h) => h.key === 'x-ratelimit-elastic-borrowed'));
    expect(borrowed).toHaveLength(120);
  });

  it('elastic at capacity: one client gets exactly the capacity of 120 (300 concurrent requests), not its max of 200', async () => {
    const responses = await spread(300, () => [['elastic_tight', 'solo']]);
    expect(responses.filter((r) => r.overall_code === 'OK')).toHaveLength(120);
  });

  it('a ban and a share hold across replicas, and /rules and /metrics show them', async () => {
    const sheddable = await spread(6, () => [
      ['banned', 'u'],
      ['criticality', 'sheddable'],
    ]);
    // share 50% of 3 = 1 sheddable admitted; the next rejection bans the key for an hour on every replica
    expect(sheddable.filter((r) => r.overall_code === 'OK')).toHaveLength(1);
    const critical = await spread(3, () => [
      ['banned', 'u'],
      ['criticality', 'critical'],
    ]);
    for (const r of critical) {
      expect(r.overall_code).toBe('OVER_LIMIT');
      expect(Number(r.statuses[0]!.duration_until_reset!.seconds)).toBeGreaterThan(3500);
      expect(r.response_headers_to_add.find((h) => h.key === 'x-ratelimit-banned')?.value).toMatch(/^"thr\.banned";t=3[56]\d\d$/);
    }
    const rules = (await (await fetch(`http://${replicas[0]!.service.httpAddress}/rules`)).json()) as {
      domains: { rules: { limits: Record<string, unknown>[] }[] }[];
    };
    const limits = rules.domains[0]!.rules.map((r) => r.limits[0]!);
    expect(limits[0]).toMatchObject({ throttling: { soft: '10%' } });
    expect(limits[2]).toMatchObject({ throttling: { elastic: { capacity: 120, max: 200 } } });
    expect(limits[3]).toMatchObject({ ban: '1h', shares: { critical: '100%', default: '100%', sheddable: '50%' } });
    const metrics = await Promise.all(replicas.map(async (r) => (await fetch(`http://${r.service.httpAddress}/metrics`)).text()));
    const total = (name: string, labels: string) =>
      metrics.reduce((sum, text) => sum + Number(new RegExp(`^${name}\\{${labels}\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0), 0);
    // every decision above was Redis's own, none made by FAILURE_MODE
    expect(metrics.map((m) => /^ratelimit_store_fallbacks_total\{mode="closed"\} (\d+)/m.exec(m)?.[1])).toEqual(['0', '0', '0']);
    expect(total('ratelimit_soft_exceeded_hits_total', 'domain="thr",class="default"')).toBe(10);
    expect(total('ratelimit_elastic_borrowed_hits_total', 'domain="thr",class="default"')).toBe(190);
    expect(total('ratelimit_bans_started_total', 'domain="thr",class="sheddable"')).toBe(1);
    expect(
      total('ratelimit_ban_rejections_total', 'domain="thr",class="sheddable"') + total('ratelimit_ban_rejections_total', 'domain="thr",class="critical"'),
    ).toBe(7);
  });
});
