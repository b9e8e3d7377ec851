/**
 * on_limit delay against the caller's gRPC deadline, with real clocks: `ratelimit serve` as its own process on
 * Redis (test/e2e/on-limit-delay.test.ts drives the same feature on a fake clock). Bound by deadlines, so it
 * runs with the timing tests (vitest.config.ts TIMING_TESTS).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { scrapeMetrics } from '../support/scrape.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

// One slot per second, waits of up to 5 s.
const RULES = `domain: shape
descriptors:
  - key: leaky
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: leaky_bucket
      on_limit: {action: delay, max_delay: 5s}
`;

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

/**
 * A delay is granted only when its answer can still reach the caller before the gRPC deadline: real clocks,
 * `ratelimit serve` as its own process on Redis. For each of KEYS keys at once, two requests: one takes the
 * bucket's slot now, the other's slot is 1 s out; the pair's deadline is 1000 + i²/4 ms (i = 0..KEYS−1), so the
 * deadlines sweep across the slot and, wherever the margins put the edge, some keys have a slot that ends
 * within a few ms of their deadline, all of them falling due together. An answer sent at such a slot misses
 * the deadline (DEADLINE_EXCEEDED; behind Envoy, no limit). Every answer must be in time: the delayed OK, or
 * the rejection at once. The first round is the load the service measures; the next two are checked.
 */
describe('on_limit delay against the caller deadline (real clocks, Redis)', () => {
  const KEYS = 60;
  let dir: string;
  let svc: ServiceProcess;
  let client: RlsTestClient;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-delay-deadline-'));
    writeFileSync(join(dir, 'shape.yaml'), RULES);
    svc = await spawnService({ CONFIG_DIR: dir, BACKEND: 'redis', REDIS_URL: redis.url, CACHE_KEY_PREFIX: `deadline-${Date.now()}:` });
    client = new RlsTestClient(svc.grpcAddress);
    await client.ask('shape', [[['leaky', 'warm-up']]]);
  });
  afterAll(async () => {
    client?.close();
    await svc?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const ask = (value: string, timeoutMs: number): Promise<string> =>
    client.shouldRateLimit({ domain: 'shape', descriptors: [{ entries: [{ key: 'leaky', value }] }] }, timeoutMs).then(
      (r) => r.overall_code,
      (e: { code: number }) => (e.code === 4 ? 'DEADLINE_EXCEEDED' : `error ${e.code}`),
    );

  /** The sweep: 1 ms apart near 1000 ms, wider further out (where a loaded machine puts the edge), up to 1.9 s. */
  const timeoutMs = (i: number) => 1000 + Math.round((i * i) / 4);
  /** One round: the codes of the requests whose slot is 1 s out (the other of each pair is OK at once). */
  const round = async (run: string): Promise<string[]> =>
    Promise.all(
      Array.from({ length: KEYS }, async (_, i) => {
        const pair = await Promise.all([ask(`${run}-${i}`, timeoutMs(i)), ask(`${run}-${i}`, timeoutMs(i))]);
        const other = pair.indexOf('OK') === 0 ? pair[1] : pair[0];
        return pair.includes('OK') ? other : `no OK: ${pair.join(' ')}`;
      }),
    );
  const lateAnswers = async () => (await scrapeMetrics(svc.httpAddress)).get('ratelimit_grpc_late_answers_total{method="ShouldRateLimit"}') ?? 0;

  it('answers every request in time: a delay that would end too near the deadline is a rejection at once', async () => {
    await round(`warm-${Date.now()}`);
    const lateBefore = await lateAnswers();
    const codes = [...(await round(`a-${Date.now()}`)), ...(await round(`b-${Date.now()}`))];
    const count = (code: string) => codes.filter((c) => c === code).length;
    expect({ deadlineExceeded: count('DEADLINE_EXCEEDED'), late: (await lateAnswers()) - lateBefore }).toEqual({ deadlineExceeded: 0, late: 0 });
    expect(codes.filter((c) => c !== 'OK' && c !== 'OVER_LIMIT')).toEqual([]);
    // Delays are still granted where there is room: the longer deadlines of the sweep.
    expect(count('OK')).toBeGreaterThan(0);
  }, 30_000);
});
