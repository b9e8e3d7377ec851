/**
 * on_limit `action: delay` end to end over gRPC, on the memory store and on Redis: a burst through a
 * leaky_bucket / token_bucket rule is admitted with zero rejections within max_delay, each answer arriving
 * when its reserved slot comes, measured on the clock the server decides with (a FakeClock the test moves);
 * a request that would wait longer than max_delay or than its gRPC deadline allows is rejected and reserves
 * nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient, type WireResponse } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

// One slot per second: Redis keeps a bucket's state for as long as its debt lasts in REAL time (PX), so the
// slots are long enough for a loaded machine to step through them.
const RULES = `domain: shape
descriptors:
  - key: leaky
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: leaky_bucket
      on_limit: {action: delay, max_delay: 5s}
  - key: tokens
    rate_limit:
      unit: minute
      requests_per_unit: 60
      algorithm: token_bucket
      burst: 2
      on_limit: {action: delay, max_delay: 3s}
`;

interface Answer {
  readonly response: WireResponse;
  /** The server's clock when the answer arrived. */
  readonly atMs: number;
}

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** The headers as Envoy reads them (key and value only). */
const headers = (r: WireResponse) => r.response_headers_to_add.map((h) => ({ key: h.key, value: h.value }));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(['memory', 'redis'] as const)('on_limit delay over gRPC (%s store)', (backend) => {
  let t: TestService;
  let client: RlsTestClient;
  beforeAll(async () => {
    t = await startTestService(
      { 'shape.yaml': RULES },
      backend === 'redis' ? { backend: 'redis', redisUrl: redis.url, cacheKeyPrefix: `delay-${Date.now()}:` } : {},
    );
    client = new RlsTestClient(t.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await t.close();
  });

  const send = (key: string, value: string, timeoutMs = 30_000): Promise<Answer> =>
    client
      .shouldRateLimit({ domain: 'shape', descriptors: [{ entries: [{ key, value }] }] }, timeoutMs)
      .then((response) => ({ response, atMs: t.clock.nowMs() }));

  it('spreads a burst at the configured rate: zero rejections within max_delay, each answer at its slot exactly', async () => {
    const t0 = t.clock.nowMs();
    const answers: Answer[] = [];
    const burst = Array.from({ length: 6 }, () => send('leaky', 'burst').then((a) => void answers.push(a)));
    // The first fits now; the next five wait 1 s, 2 s, ... 5 s (T = 1 s, max_delay 5 s).
    await eventually(() => answers.length === 1 && t.timer.pending === 5, { what: 'first answer and five waits' });
    expect(answers[0]!.response.overall_code).toBe('OK');
    expect(answers[0]!.atMs).toBe(t0);
    // A seventh would wait 6 s > max_delay: rejected at once, told the exact wait.
    const seventh = await send('leaky', 'burst');
    expect(seventh.response.overall_code).toBe('OVER_LIMIT');
    expect(headers(seventh.response)).toContainEqual({ key: 'retry-after', value: '6' });

    for (let k = 1; k <= 5; k++) {
      t.timer.advance(999);
      await pause(50);
      expect(answers.length, `nothing answered before slot ${k}`).toBe(k);
      t.timer.advance(1);
      await eventually(() => answers.length === k + 1, { what: `answer for slot ${k}` });
      expect(answers[k]!.atMs - t0).toBe(k * 1000);
      expect(answers[k]!.response.overall_code).toBe('OK');
    }
    await Promise.all(burst);
    expect(answers.every((a) => a.response.overall_code === 'OK')).toBe(true);
  });

  it('reserves nothing for a request that cannot be served within its deadline, and never answers after it', async () => {
    // token_bucket burst 2, one token per second: two pass, the third waits 1 s, the fourth 2 s.
    const first = await Promise.all([send('tokens', 'd'), send('tokens', 'd')]);
    expect(first.map((a) => a.response.overall_code)).toEqual(['OK', 'OK']);
    const t0 = t.clock.nowMs();
    const third = send('tokens', 'd');
    await eventually(() => t.timer.pending === 1, { what: 'the third request waiting' });
    // The fourth needs 2 s but its gRPC deadline leaves less than 1.5 s: rejected, nothing reserved.
    const fourth = await send('tokens', 'd', 1500);
    expect(fourth.response.overall_code).toBe('OVER_LIMIT');
    expect(headers(fourth.response)).toContainEqual({ key: 'retry-after', value: '2' });
    // With a deadline that allows it, the same request gets the same slot, 2 s out: nothing was taken.
    const fifth = send('tokens', 'd', 5000);
    await eventually(() => t.timer.pending === 2, { what: 'the fifth request waiting' });
    expect(t.timer.nextAt()).toBe(t0 + 1000);
    t.timer.advance(1000);
    expect((await third).atMs - t0).toBe(1000);
    t.timer.advance(1000);
    const answered = await fifth;
    expect(answered.response.overall_code).toBe('OK');
    expect(answered.atMs - t0).toBe(2000);
  });

  it('counts delayed requests and their delays in /metrics', async () => {
    const text = await (await fetch(`${t.httpBase}/metrics`)).text();
    expect(text).toMatch(/ratelimit_on_limit_delayed_total\{domain="shape"\} [1-9]/);
    expect(text).toMatch(/ratelimit_on_limit_delay_seconds_bucket\{le="5"\} [1-9]/);
  });
});
