/**
 * Many replicas, one limit: three real server processes (as `ratelimit serve` runs in three pods) share one
 * real redis-server; 200 concurrent clients spread over them must see exactly L = 100 admitted, for every
 * algorithm that promises exactness. Then Redis goes away and comes back under the running servers.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RlsTestClient } from '../support/rls-client.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const ALGORITHMS = ['fixed_window', 'sliding_window_log', 'sliding_window_counter', 'token_bucket', 'leaky_bucket'];

// Day windows: refill during the test (100 per day) is far below one request, so every algorithm is exact here.
const RULES = `domain: shared
descriptors:
${ALGORITHMS.map((a) => `  - key: algo\n    value: ${a}\n    rate_limit: {unit: day, requests_per_unit: 100, algorithm: ${a}${a.endsWith('bucket') ? ', burst: 100' : ''}}`).join('\n')}
`;

interface Replica {
  service: ServiceProcess;
  client: RlsTestClient;
}

let redis: RedisServer;
let dir: string;
const replicas: Replica[] = [];

async function startReplica(env: Record<string, string>): Promise<Replica> {
  const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, ...env });
  return { service, client: new RlsTestClient(service.grpcAddress) };
}

beforeAll(async () => {
  redis = await startRedis();
  dir = mkdtempSync(join(tmpdir(), 'rl-replicas-'));
  writeFileSync(join(dir, 'shared.yaml'), RULES);
  replicas.push(...(await Promise.all([0, 1, 2].map(() => startReplica({ FAILURE_MODE: 'open' })))));
}, 60_000);

afterAll(async () => {
  for (const r of replicas) r.client.close();
  await Promise.all(replicas.map((r) => r.service.stop()));
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('three replicas sharing one Redis', () => {
  for (const algorithm of ALGORITHMS) {
    it(`admits exactly 100 of 200 concurrent requests with ${algorithm}`, async () => {
      const calls = Array.from({ length: 200 }, (_, i) => replicas[i % 3]!.client.ask('shared', [[['algo', algorithm]]]));
      const responses = await Promise.all(calls);
      const admitted = responses.filter((r) => r.overall_code === 'OK').length;
      expect(admitted).toBe(100);
      expect(responses.filter((r) => r.overall_code === 'OVER_LIMIT')).toHaveLength(100);
    });
  }

  it('keeps answering while Redis is down (FAILURE_MODE=open, within the deadline) and recovers when it returns', async () => {
    const client = replicas[0]!.client;
    await redis.stopRedis();
    // A 50 ms gRPC deadline: an answer after it would fail the call with DEADLINE_EXCEEDED.
    const during = await client.shouldRateLimit({ domain: 'shared', descriptors: [{ entries: [{ key: 'algo', value: 'fixed_window' }] }] }, 50);
    expect(during.overall_code).toBe('OK'); // fail open: the limit is exhausted, but Redis cannot say so
    await redis.restart(); // empty: counts start again
    const until = Date.now() + 5000;
    let recovered = false;
    let recoveredAfter = 0;
    const back = Date.now();
    while (!recovered && Date.now() < until) {
      const r = await client.ask('shared', [[['algo', 'fixed_window']]]);
      recovered = r.statuses[0]!.limit_remaining === 99;
      recoveredAfter = Date.now() - back;
      if (!recovered) await new Promise((res) => setTimeout(res, 25));
    }
    expect(recovered).toBe(true);
    expect(recoveredAfter).toBeLessThan(1000);
  });
});
