/**
 * Admission by predicted cost (docs/costs.md) over the real gRPC server, on memory and on Redis, with the calls
 * Envoy makes: the admission (the rule's descriptor; answered with `predicted_cost` in the dynamic metadata) and
 * the settlement at stream end (the same descriptor plus `predicted_cost: <P>`, the actual cost as hits_addend).
 * Both stores run one script of calls and must give the same answers, written out here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient, type RawDescriptor } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';
import { scrapeMetrics } from '../support/scrape.js';

const OK = 1;
const OVER_LIMIT = 2;
const MINUTE = 60_000;
/** A minute boundary, so the fixed window is predictable. */
const T0 = 1_700_000_040_000;

const RULES = `domain: llm
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 10000, predict_cost: {initial: 500, window: 5m, clip: 4000}}
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 10000}
  - key: sliding
    rate_limit: {unit: minute, requests_per_unit: 10000, algorithm: sliding_window_counter, predict_cost: {initial: 2000}}
`;

interface Answer {
  code: number;
  remaining: number;
  predicted?: string;
}

async function answer(client: RawRlsClient, d: RawDescriptor): Promise<Answer> {
  const r = await client.call('llm', [d]);
  const p = r.dynamicMetadata.get('predicted_cost');
  return {
    code: r.overallCode,
    remaining: r.statuses[0]!.limitRemaining,
    ...(p !== undefined ? { predicted: p.field === 3 ? Buffer.from(p.value as Uint8Array).toString('utf8') : `field ${p.field}` } : {}),
  };
}

const admit = (c: RawRlsClient, user: string, key = 'user') => answer(c, { entries: [[key, user]] });
const check = (c: RawRlsClient, user: string, key = 'user') => answer(c, { entries: [[key, user]], hitsAddend: 0 });
const settle = (c: RawRlsClient, user: string, predicted: string, actual: number, key = 'user') =>
  answer(c, {
    entries: [
      [key, user],
      ['predicted_cost', predicted],
    ],
    hitsAddend: actual,
  });

/** Every answer of one script of calls, in order, for comparing stores. */
async function script(t: TestService, c: RawRlsClient): Promise<Answer[]> {
  const out: Answer[] = [];
  t.clock.set(T0 + 1000);
  out.push(await admit(c, 'a')); // P = initial 500
  out.push(await settle(c, 'a', '500', 1000)); // +500
  out.push(await check(c, 'a')); // the estimator has seen 1000
  out.push(await admit(c, 'a')); // charged 1000
  out.push(await settle(c, 'a', '1000', 200)); // refund 800; mean (1000 + 200) / 2 = 600
  out.push(await check(c, 'a'));
  out.push(await settle(c, 'a', '600', 1_000_000)); // charged in full, never rejected; the estimator takes 4000
  out.push(await check(c, 'a')); // over the limit: OVER_LIMIT, no prediction
  out.push(await admit(c, 'a')); // does not fit: rejected, no predicted_cost
  t.clock.set(T0 + MINUTE + 1000); // the next window: count 0
  out.push(await settle(c, 'a', '4000', 0)); // refund 4000 floors at 0; mean (1000 + 200 + 4000 + 0) / 4 = 1300
  out.push(await check(c, 'a'));
  out.push(await settle(c, 'a', 'lots', 300)); // unparsed: an ordinary charge of 300
  out.push(await settle(c, 'a', '5000', 100)); // above max(initial, clip): no refund of 4,900, an ordinary charge of 100
  out.push(await settle(c, 'a', '10', 300, 'plain')); // no predict_cost: an ordinary charge of 300
  t.clock.set(T0 + 7 * MINUTE); // the estimator's window has passed: initial again
  out.push(await check(c, 'a'));
  return out;
}

const EXPECTED: Answer[] = [
  { code: OK, remaining: 9500, predicted: '500' },
  { code: OK, remaining: 9000 },
  { code: OK, remaining: 9000, predicted: '1000' },
  { code: OK, remaining: 8000, predicted: '1000' },
  { code: OK, remaining: 8800 },
  { code: OK, remaining: 8800, predicted: '600' },
  { code: OK, remaining: 0 },
  { code: OVER_LIMIT, remaining: 0 },
  { code: OVER_LIMIT, remaining: 0 },
  { code: OK, remaining: 10000 },
  { code: OK, remaining: 10000, predicted: '1300' },
  { code: OK, remaining: 9700 },
  { code: OK, remaining: 9600 },
  { code: OK, remaining: 9700 },
  { code: OK, remaining: 10000, predicted: '500' },
];

for (const backend of ['memory', 'redis'] as const) {
  describe(`admission by predicted cost (${backend})`, () => {
    let redis: RedisServer | undefined;
    let t: TestService;
    let client: RawRlsClient;
    beforeAll(async () => {
      redis = backend === 'redis' ? await startRedis() : undefined;
      t = await startTestService({ 'llm.yaml': RULES }, redis === undefined ? {} : { backend: 'redis', redisUrl: redis.url });
      client = new RawRlsClient(t.grpcAddress);
    });
    afterAll(async () => {
      client.close();
      await t.close();
      await redis?.stop();
    });

    it('predicts, settles, refunds (floored at 0), clips and forgets as written', async () => {
      expect(await script(t, client)).toEqual(EXPECTED);
    });

    it('sliding_window_counter: the settlement charges and refunds the current window, floored at 0', async () => {
      t.clock.set(T0 + 20 * MINUTE + 1000);
      const answers = [
        await admit(client, 's', 'sliding'), // 2000
        await settle(client, 's', '2000', 500, 'sliding'), // refund 1500: 500
        await admit(client, 's', 'sliding'), // P = 500: 1000
        await settle(client, 's', '500', 2500, 'sliding'), // +2000: 3000
        await check(client, 's', 'sliding'), // mean (500 + 2500) / 2
      ];
      expect(answers).toEqual([
        { code: OK, remaining: 8000, predicted: '2000' },
        { code: OK, remaining: 9500 },
        { code: OK, remaining: 9000, predicted: '500' },
        { code: OK, remaining: 7000 },
        { code: OK, remaining: 7000, predicted: '1500' },
      ]);
    });

    it('GET /rules shows the predict_cost of a rule', async () => {
      const rules = JSON.stringify(await (await fetch(`${t.httpBase}/rules`)).json());
      expect(rules).toContain('"predict_cost":{"initial":500,"window":"5m","clip":4000}');
      expect(rules).toContain('"predict_cost":{"initial":2000,"window":"5m","clip":10000}');
    });

    it('counts predictions, settlements, refunds and ordinary charges', async () => {
      const samples = await scrapeMetrics(t.httpBase.replace('http://', ''));
      const value = (series: string) => samples.get(series) ?? -1;
      expect(value('ratelimit_cost_predictions_total{domain="llm"}')).toBe(2 + 2);
      expect(value('ratelimit_cost_settlements_total{domain="llm"}')).toBe(4 + 2);
      expect(value('ratelimit_cost_refunds_total{domain="llm"}')).toBe(2 + 1);
      expect(value('ratelimit_cost_ordinary_charges_total{domain="llm",reason="unparsed"}')).toBe(2);
      expect(value('ratelimit_cost_ordinary_charges_total{domain="llm",reason="unpredicted"}')).toBe(1);
    });
  });
}
