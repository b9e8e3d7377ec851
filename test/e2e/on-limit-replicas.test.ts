/**
 * on_limit state kept in Redis is shared by every replica: three services on one redis-server (one clock,
 * as synchronised hosts have) see one consecutive-rejection count and one degrade_max budget per key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/vocab/clock.js';
import { eventually } from '../support/eventually.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient, type WireResponse } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';
import { MESSAGE_RULES } from '../support/on-limit-rules.js';

const retryAfter = (r: WireResponse) => r.response_headers_to_add.find((h) => h.key === 'retry-after')?.value;

describe('on_limit across 3 replicas sharing Redis', () => {
  let redis: RedisServer;
  const clock = new FakeClock(1_700_000_200_000);
  const replicas: TestService[] = [];
  const clients: RlsTestClient[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    for (let i = 0; i < 3; i++) {
      const t = await startTestService({ 'msg.yaml': MESSAGE_RULES }, { backend: 'redis', redisUrl: redis.url, cacheKeyPrefix: 'shared:' }, clock);
      replicas.push(t);
      clients.push(new RlsTestClient(t.grpcAddress));
    }
  });
  afterAll(async () => {
    for (const c of clients) c.close();
    for (const t of replicas) await t.close();
    await redis.stop();
  });
  const ask = (i: number, key: string, value: string) => clients[i % 3]!.shouldRateLimit({ domain: 'msg', descriptors: [{ entries: [{ key, value }] }] });

  it('counts consecutive rejections of a key together: 1, 2, 4, 8, 10, 10 whichever replica answers; an admission anywhere resets', async () => {
    expect((await ask(0, 'backoff', 'r')).overall_code).toBe('OK');
    const waits: (string | undefined)[] = [];
    for (let i = 0; i < 6; i++) waits.push(retryAfter(await ask(i, 'backoff', 'r')));
    expect(waits).toEqual(['1', '2', '4', '8', '10', '10']);
    clock.advance(1000);
    expect((await ask(2, 'backoff', 'r')).overall_code).toBe('OK');
    expect(retryAfter(await ask(0, 'backoff', 'r'))).toBe('1');
    expect(retryAfter(await ask(1, 'backoff', 'r'))).toBe('2');
  });

  it('reserves distinct slots for a concurrent burst through delay spread over the replicas: none rejected within max_delay', async () => {
    clock.set(1_700_000_500_000);
    const t0 = clock.nowMs();
    // leaky_bucket 60/min (one slot a second), max_delay 5 s: six at once fit (+0 … +5 s), the seventh does not
    const burst = Array.from({ length: 6 }, (_, i) =>
      clients[i % 3]!.shouldRateLimit({ domain: 'msg', descriptors: [{ entries: [{ key: 'shaped', value: 'r' }] }] }, 30_000),
    );
    await eventually(() => replicas.reduce((n, t) => n + t.timer.pending, 0) === 5, { what: 'five requests waiting for their slots' });
    const slots = replicas
      .flatMap((t) => t.timer.waitsAt())
      .map((at) => at - t0)
      .sort((a, b) => a - b);
    expect(slots).toEqual([1000, 2000, 3000, 4000, 5000]);
    expect(retryAfter(await ask(0, 'shaped', 'r'))).toBe('6');
    clock.advance(5000); // the replicas share the clock; each timer ends its due waits
    for (const t of replicas) t.timer.advance(0);
    const answers = await Promise.all(burst);
    expect(answers.map((r) => r.overall_code)).toEqual(['OK', 'OK', 'OK', 'OK', 'OK', 'OK']);
  });

  it('shares one degrade_max budget per window', async () => {
    clock.set(1_700_000_400_000);
    const codes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await ask(i, 'degrade', 'shared');
      codes.push(`${r.overall_code}${r.request_headers_to_add.length > 0 ? '+degraded' : ''}`);
    }
    expect(codes).toEqual(['OK', 'OK', 'OK+degraded', 'OK+degraded', 'OVER_LIMIT', 'OVER_LIMIT']);
  });
});
