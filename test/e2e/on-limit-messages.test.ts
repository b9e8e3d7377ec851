/**
 * on_limit end to end over gRPC, on the memory store and Redis: the client's message (retry policy, body
 * byte for byte with hostile descriptor values, headers, redirect location and HTTP status), degrade with
 * its request headers and degrade_max, and exponential backoff. Fake clock: the server decides at the time
 * the test sets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient, type WireResponse } from '../support/rls-client.js';
import { MESSAGE_RULES } from '../support/on-limit-rules.js';
import { startTestService, type TestService } from '../support/service.js';

const HOSTILE = 'a"b\\c\nd é 😀';
const headers = (r: WireResponse) => r.response_headers_to_add.map((h) => ({ key: h.key, value: h.value }));

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

describe.each(['memory', 'redis'] as const)('on_limit messages over gRPC (%s store)', (backend) => {
  let t: TestService;
  let client: RlsTestClient;
  beforeAll(async () => {
    t = await startTestService(
      { 'msg.yaml': MESSAGE_RULES },
      backend === 'redis' ? { backend: 'redis', redisUrl: redis.url, cacheKeyPrefix: `msg-${Date.now()}:` } : {},
    );
    client = new RlsTestClient(t.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await t.close();
  });
  const ask = (key: string, value: string) => client.shouldRateLimit({ domain: 'msg', descriptors: [{ entries: [{ key, value }] }] });

  it('renders a text body byte for byte, values inserted as sent, with the extra headers made header-safe', async () => {
    t.clock.set(1_700_000_080_000); // 20 s before a minute boundary
    expect((await ask('text', HOSTILE)).overall_code).toBe('OK');
    const r = await ask('text', HOSTILE);
    expect(r.overall_code).toBe('OVER_LIMIT');
    expect(r.raw_body.toString('utf8')).toBe(`slow down text=${HOSTILE} (per-user, 1 per 60s): retry in 20s\n`);
    expect(headers(r)).toEqual(
      expect.arrayContaining([
        { key: 'retry-after', value: '20' },
        { key: 'content-type', value: 'text/plain; charset=utf-8' },
        { key: 'x-limit-reason', value: 'user text=a"b\\c?d ? ??' },
      ]),
    );
  });

  it('renders a JSON body that parses whatever the descriptor holds; retry none drops retry-after', async () => {
    t.clock.set(1_700_006_400_000 + 72_000_500); // 4 h less 0.5 s before the UTC midnight that ends the day window
    const dayEnd = Math.ceil(t.clock.nowMs() / 86_400_000) * 86_400_000;
    expect((await ask('json', HOSTILE)).overall_code).toBe('OK');
    const r = await ask('json', HOSTILE);
    expect(r.overall_code).toBe('OVER_LIMIT');
    const wait = Math.ceil((dayEnd - t.clock.nowMs()) / 1000);
    const expected = `{"error":"daily limit reached","who":${JSON.stringify(`json=${HOSTILE}`)},"domain":"msg","retry_after":${wait},"reset_at":"${new Date(dayEnd).toISOString().replace('.000Z', 'Z')}"}`;
    expect(r.raw_body.toString('utf8')).toBe(expected);
    expect(JSON.parse(r.raw_body.toString('utf8'))).toMatchObject({ who: `json=${HOSTILE}`, retry_after: wait });
    expect(headers(r).map((h) => h.key)).not.toContain('retry-after');
    expect(headers(r)).toContainEqual({ key: 'content-type', value: 'application/json' });
  });

  it('degrades over the limit with the request headers, then rejects beyond degrade_max', async () => {
    t.clock.set(1_700_000_100_000);
    const codes: string[] = [];
    const upstream: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await ask('degrade', 'u1');
      codes.push(r.overall_code);
      upstream.push(r.request_headers_to_add.map((h) => `${h.key}: ${h.value}`).join('|'));
    }
    expect(codes).toEqual(['OK', 'OK', 'OK', 'OK', 'OVER_LIMIT']);
    expect(upstream).toEqual(['', '', 'x-degraded: true', 'x-degraded: true', '']);
    // a new window: plain admissions again, then two more degraded
    t.clock.advance(60_000);
    expect((await ask('degrade', 'u1')).request_headers_to_add).toEqual([]);
  });

  it('backs off exponentially over consecutive rejections (1, 2, 4, 8, capped at 10), reset by an admission', async () => {
    t.clock.set(1_700_000_200_000);
    expect((await ask('backoff', 'u2')).overall_code).toBe('OK');
    const waits: string[] = [];
    for (let i = 0; i < 6; i++) waits.push(headers(await ask('backoff', 'u2')).find((h) => h.key === 'retry-after')!.value);
    expect(waits).toEqual(['1', '2', '4', '8', '10', '10']);
    t.clock.advance(1000); // the exact wait is over: admitted, which resets the count
    expect((await ask('backoff', 'u2')).overall_code).toBe('OK');
    const again = await ask('backoff', 'u2');
    expect(headers(again)).toContainEqual({ key: 'retry-after', value: '1' });
  });

  it('redirect: over RLS a rejection like reject, carrying location and the status for ext_authz', async () => {
    t.clock.set(1_700_000_300_000);
    await ask('redirect', 'x y');
    const r = await ask('redirect', 'x y');
    expect(r.overall_code).toBe('OVER_LIMIT');
    expect(headers(r)).toContainEqual({ key: 'location', value: 'https://example.com/busy?who=redirect%3Dx%20y' });
  });
});
