/**
 * Costs charged after the response and shadow-mode counting, over the real gRPC
 * server on memory and on Redis, with the calls Envoy makes for a `rate_limits` entry with
 * `apply_on_stream_done: true` and a `hits_addend` format (docs/costs.md):
 * - on the request path, the descriptor with a present hits_addend of 0: a pure check, nothing consumed;
 * - at stream end, the same descriptor with the cost: counted even when it crosses the limit
 *   (`count_every_hit`), though the answer says OVER_LIMIT (Envoy ignores it);
 * - a refund (`is_negative_hits`, Envoy 1.38+): units given back, floored at 0, answered OK.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawRlsClient, type RawDescriptor } from '../support/raw-rls.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const OK = 1;
const OVER_LIMIT = 2;

const rules = (shadow: boolean) => `domain: llm
descriptors:
  - key: tokens
    rate_limit: {unit: minute, requests_per_unit: 1000, count_every_hit: true}
  - key: leaky
    rate_limit: {unit: minute, requests_per_unit: 1000}
  - key: window
    rate_limit: {unit: minute, requests_per_unit: 1000, algorithm: sliding_window_counter, count_every_hit: true}
  - key: bucket
    rate_limit: {unit: minute, requests_per_unit: 1000, algorithm: token_bucket}
  - key: shadow
    ${shadow ? 'shadow_mode: true\n    ' : ''}rate_limit: {unit: minute, requests_per_unit: ${shadow ? 2 : 10}}
`;

for (const backend of ['memory', 'redis'] as const) {
  describe(`costs charged after the response (${backend})`, () => {
    let redis: RedisServer | undefined;
    let t: TestService;
    let client: RawRlsClient;
    beforeAll(async () => {
      redis = backend === 'redis' ? await startRedis() : undefined;
      t = await startTestService({ 'llm.yaml': rules(true) }, redis === undefined ? {} : { backend: 'redis', redisUrl: redis.url });
      t.clock.set(1_700_000_040_000 + 1_000); // 1 s into a minute
      client = new RawRlsClient(t.grpcAddress);
    });
    afterAll(async () => {
      client.close();
      await t.close();
      await redis?.stop();
    });

    const call = async (key: string, d: Omit<RawDescriptor, 'entries'>) => {
      const r = await client.call('llm', [{ entries: [[key, 'user-1']], ...d }]);
      return { code: r.overallCode, remaining: r.statuses[0]!.limitRemaining };
    };
    const check = (key: string) => call(key, { hitsAddend: 0 });
    const charge = (key: string, cost: number) => call(key, { hitsAddend: cost });

    for (const key of ['tokens', 'window']) {
      it(`${key}: a present hits_addend of 0 is a pure check; a charge that crosses the limit still counts (count_every_hit)`, async () => {
        for (let i = 0; i < 3; i++) expect(await check(key)).toEqual({ code: OK, remaining: 1000 });
        expect(await charge(key, 700)).toEqual({ code: OK, remaining: 300 });
        expect(await check(key)).toEqual({ code: OK, remaining: 300 });
        // the last charge crosses the limit: answered OVER_LIMIT (ignored by Envoy) and counted
        expect((await charge(key, 500)).code).toBe(OVER_LIMIT);
        expect(await check(key)).toEqual({ code: OVER_LIMIT, remaining: 0 });
        // a refund of 600 (is_negative_hits) brings the count from 1200 to 600: answered OK
        expect((await call(key, { hitsAddend: 600, negative: true })).code).toBe(OK);
        expect(await check(key)).toEqual({ code: OK, remaining: 400 });
        // refunds are floored at 0
        expect((await call(key, { hitsAddend: 5000, negative: true })).code).toBe(OK);
        expect(await check(key)).toEqual({ code: OK, remaining: 1000 });
      });
    }

    it('without count_every_hit, the charge that crosses the limit is dropped (what the field is for)', async () => {
      expect(await charge('leaky', 700)).toEqual({ code: OK, remaining: 300 });
      expect((await charge('leaky', 500)).code).toBe(OVER_LIMIT);
      expect(await check('leaky')).toEqual({ code: OK, remaining: 300 });
    });

    it('a refund gives tokens back to a bucket, never beyond full', async () => {
      expect(await charge('bucket', 900)).toEqual({ code: OK, remaining: 100 });
      expect((await call('bucket', { hitsAddend: 400, negative: true })).code).toBe(OK);
      expect((await check('bucket')).remaining).toBe(500);
      await call('bucket', { hitsAddend: 10_000, negative: true });
      expect((await check('bucket')).remaining).toBe(1000);
    });

    it('shadow mode: hits over the limit of an admitted request are counted', async () => {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push((await call('shadow', {})).code);
      expect(answers).toEqual([OK, OK, OK, OK, OK]);
      // The same counter under the rule enforced with a limit of 10: the 5 hits are there.
      writeFileSync(join(t.dir, 'llm.yaml'), rules(false));
      expect((await t.service.rules.reload()).ok).toBe(true);
      expect(await check('shadow')).toEqual({ code: OK, remaining: 5 });
    });
  });
}
