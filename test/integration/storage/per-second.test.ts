/**
 * REDIS_PERSECOND=true as the settings build it (app/store-factory.ts), on two real redis-servers: one-second
 * limits are counted in the per-second Redis and the others in the main one; a request touching both is decided
 * as one under concurrency (admitted only when both admit; a rejected request leaves no hit in either); and
 * either Redis stopped leaves the limits of the other deciding.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildStore } from '../../../src/app/store-factory.js';
import { createLogger } from '../../../src/observability/log.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import type { CounterStore, LimitCheck } from '../../../src/storage/counter-store.js';
import { systemClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';
import { testSettings } from '../../support/service.js';

const log = createLogger({ level: 'error', format: 'text', write: () => {} });
let serial = 0;
function check(name: string, windowMs: number, limit: number, hits = 1): LimitCheck {
  const key = counterKey('rl:', 'edge', [{ key: name, value: `${process.pid}-${++serial}` }], 'fixed_window', windowMs);
  return { key, algorithm: 'fixed_window', limit, windowMs, burst: 1, hits, enforce: true };
}
const read = (c: LimitCheck): LimitCheck => ({ ...c, hits: 0 });

let main: RedisServer;
let fast: RedisServer;
let store: CounterStore;
beforeAll(async () => {
  [main, fast] = await Promise.all([startRedis(), startRedis()]);
  const settings = testSettings({
    backend: 'redis',
    redisUrl: main.url,
    redisPerSecond: true,
    redisPerSecondUrl: `127.0.0.1:${fast.port}`, // the reference's host:port form
    failureMode: 'open',
    localCacheSize: 0,
  });
  store = await buildStore(settings, { clock: systemClock, log, metrics: createMetrics({ defaultMetrics: false }) });
});
afterAll(async () => {
  await store?.close();
  await main?.stop();
  await fast?.stop();
});

async function keys(redis: RedisServer, pattern: string): Promise<string> {
  return rawCommand(redis.port, ['KEYS', pattern]);
}

describe('REDIS_PERSECOND', () => {
  it('counts one-second limits in the per-second Redis and the others in the main one', async () => {
    const now = Date.now();
    const perSecond = check('second', 1000, 10);
    const perMinute = check('minute', 60_000, 10);
    expect((await store.apply([perSecond, perMinute], now)).map((o) => o.remaining)).toEqual([9, 9]);
    const tag = (c: LimitCheck) => `*${c.key.slice(c.key.indexOf('{') + 1, c.key.indexOf('}'))}*`;
    expect(await keys(fast, tag(perSecond))).toMatch(/^\*1\r\n/);
    expect(await keys(main, tag(perSecond))).toBe('*0\r\n');
    expect(await keys(main, tag(perMinute))).toMatch(/^\*1\r\n/);
    expect(await keys(fast, tag(perMinute))).toBe('*0\r\n');
  });

  it('decides a request touching both as one, under concurrency: no admission past either limit, no hit of a rejected request left', async () => {
    const now = Date.now() - (Date.now() % 1000) + 10; // one instant, inside one second
    const a = check('a', 1000, 5);
    const b = check('b', 60_000, 8);
    // 30 requests on both limits and 30 on b alone, all at once
    const both = Array.from({ length: 30 }, () => store.apply([a, b], now));
    const onlyB = Array.from({ length: 30 }, () => store.apply([b], now));
    const admittedBoth = (await Promise.all(both)).filter((o) => o.every((x) => x.allowed)).length;
    const admittedB = (await Promise.all(onlyB)).filter((o) => o[0]!.allowed).length;
    expect(admittedBoth).toBeLessThanOrEqual(5);
    expect(admittedBoth + admittedB).toBeLessThanOrEqual(8);
    // Each limit counts exactly the requests admitted as a whole: the hits a rejected request took in one store
    // while the other rejected it were given back. (Meanwhile they may have made another request be rejected
    // too: the accepted race, a false rejection near a limit, never an admission past it.)
    const [ra, rb] = await store.apply([read(a), read(b)], now);
    expect(ra!.remaining).toBe(5 - admittedBoth);
    expect(rb!.remaining).toBe(8 - admittedBoth - admittedB);
    expect(admittedBoth).toBeGreaterThan(0);
  });

  it('gives back the per-second hits of a request the main Redis rejects', async () => {
    const now = Date.now() - (Date.now() % 1000) + 10;
    const a = check('a', 1000, 5);
    const b = check('b', 60_000, 1);
    expect((await store.apply([a, b], now)).map((o) => o.allowed)).toEqual([true, true]);
    const rejected = await store.apply([a, b], now);
    expect(rejected.map((o) => o.allowed)).toEqual([true, false]);
    expect(rejected[0]!.remaining).toBe(4); // reported as the quota it left untouched
    expect((await store.apply([read(a)], now))[0]!.remaining).toBe(4);
  });

  it('keeps deciding the limits of one Redis while the other is stopped', async () => {
    const now = Date.now();
    const a = check('a', 1000, 1);
    const b = check('b', 60_000, 2);
    await fast.stopRedis();
    try {
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push((await store.apply([a, b], now, { deadlineMs: Date.now() + 500 })).map((o) => o.allowed));
      // a is answered by FAILURE_MODE=open (admitted); b keeps its limit in the main Redis
      expect(answers).toEqual([
        [true, true],
        [true, true],
        [true, false],
      ]);
    } finally {
      await fast.restart();
    }
    const c = check('c', 1000, 1);
    const d = check('d', 60_000, 5);
    await main.stopRedis();
    try {
      const answers = [];
      for (let i = 0; i < 2; i++) answers.push((await store.apply([c, d], now, { deadlineMs: Date.now() + 500 })).map((o) => o.allowed));
      expect(answers).toEqual([
        [true, true],
        [false, true],
      ]);
    } finally {
      await main.restart();
    }
  });
});
