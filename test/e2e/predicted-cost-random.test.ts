/**
 * Admission by predicted cost on random traffic, memory beside Redis: seeded rounds of requests whose admissions
 * and settlements interleave at random (as concurrent requests finish out of order), with costs drawn from a
 * skewed distribution (mostly small, now and then one far above the clip). Both stores must give every call the
 * same answer, and after each round:
 * - the counter equals the sum of the actual costs of the admitted requests (each admission charged P in the
 *   same window, so no refund reaches the floor);
 * - the prediction equals the mean of the clipped costs settled in the estimator's window, rounded up.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient } from '../support/raw-rls.js';
import { prng } from '../support/prng.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const LIMIT = 50_000;
const CLIP = 8_000;
const RULES = `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: ${LIMIT}, predict_cost: {initial: 700, window: 2m, clip: ${CLIP}}}
`;
const T0 = 1_700_000_040_000;
const ROUNDS = 6;
const PER_ROUND = 40;
const OK = 1;

describe('admission by predicted cost on random traffic (memory beside Redis)', () => {
  let redis: RedisServer;
  const services: TestService[] = [];
  const clients: RawRlsClient[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    services.push(await startTestService({ 'llm.yaml': RULES }));
    services.push(await startTestService({ 'llm.yaml': RULES }, { backend: 'redis', redisUrl: redis.url }));
    for (const s of services) clients.push(new RawRlsClient(s.grpcAddress));
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    for (const s of services) await s.close();
    await redis?.stop();
  });

  /** The same call on both stores; their answers must agree. */
  const both = async (descriptor: Parameters<RawRlsClient['call']>[1][number]) => {
    const [m, r] = await Promise.all(clients.map((c) => c.call('llm', [descriptor])));
    const view = (x: typeof m) => ({
      code: x!.overallCode,
      remaining: x!.statuses[0]!.limitRemaining,
      predicted: text(x!.dynamicMetadata.get('predicted_cost')),
    });
    expect(view(r)).toEqual(view(m));
    return view(m);
  };
  const text = (v: { value: unknown } | undefined) => (v === undefined ? undefined : Buffer.from(v.value as Uint8Array).toString('utf8'));
  const at = (ms: number) => {
    for (const s of services) s.clock.set(ms);
  };

  it('agree on every answer; the counter is the sum of actual costs; P is the mean of clipped settled costs', async () => {
    const rand = prng('predicted-cost');
    const settledLog: { at: number; cost: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in its own minute, 30 s apart from the last, and for its own user.
      const now = T0 + round * 90_000 + 1_000;
      at(now);
      const user = `u${round}`;
      const pending: { predicted: number; actual: number }[] = [];
      let admittedActual = 0;
      let started = 0;
      while (started < PER_ROUND || pending.length > 0) {
        if (started < PER_ROUND && (pending.length === 0 || rand.chance(0.6))) {
          started++;
          const a = await both({ entries: [['user', user]] });
          if (a.code !== OK) continue; // rejected: Envoy sends no settlement
          expect(a.predicted).toBeDefined();
          // Mostly 50..1,500; one in eight far above the clip.
          const actual = rand.chance(0.125) ? rand.int(20_000, 60_000) : rand.int(50, 1_500);
          pending.push({ predicted: Number(a.predicted), actual });
          admittedActual += actual;
        } else {
          const [s] = pending.splice(rand.int(0, pending.length - 1), 1);
          const answer = await both({
            entries: [
              ['user', user],
              ['predicted_cost', String(s!.predicted)],
            ],
            hitsAddend: s!.actual,
          });
          expect(answer.code).toBe(OK);
          settledLog.push({ at: now, cost: Math.min(s!.actual, CLIP) });
        }
      }
      // The counter, read exactly: a pure check under a per-request limit far above it (the same key).
      const big = 1_000_000_000;
      const read = await both({ entries: [['user', user]], limit: { requestsPerUnit: big, unit: 2 }, hitsAddend: 0 });
      expect(big - read.remaining).toBe(admittedActual);
      // The prediction: the mean of the clipped costs settled within the 2-minute window (slots of 12 s).
      const inWindow = settledLog.filter((e) => Math.floor(now / 12_000) - Math.floor(e.at / 12_000) < 10);
      const mean = Math.ceil(inWindow.reduce((sum, e) => sum + e.cost, 0) / inWindow.length);
      const probe = await both({ entries: [['user', 'probe']], hitsAddend: 0 });
      expect(probe.predicted).toBe(String(Math.max(1, mean)));
    }
  });
});
