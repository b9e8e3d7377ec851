/**
 * Redis stopped in the middle of a load and started again: nothing crashes, no promise is left unhandled,
 * every request is answered by its failure mode before its deadline while Redis is down, and requests are
 * served by Redis again within 1 s of its return.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { ResilientStore, type FailureMode } from '../../../src/storage/resilient.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

const DEADLINE_MS = 60;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Answer {
  readonly mode: FailureMode;
  readonly allowed: boolean;
  readonly late: number; // ms after the deadline (<= 0: in time)
}

describe('Redis outage under load', () => {
  let redis: RedisServer;
  let primary: RedisStore;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };
  const logs: string[] = [];

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    redis = await startRedis();
    primary = createRedisStore({ url: redis.url, log: (m) => logs.push(m), logIntervalMs: 10_000 });
    await primary.waitUntilReady(5000);
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await primary.close();
    await redis.stop();
  });

  it('answers by mode within the deadline while down, and uses Redis again within 1 s of its return', async () => {
    let fallbackFlag = false;
    const local = new MemoryStore({ maxKeys: 1000 });
    const stores = {
      open: new ResilientStore(primary, { mode: 'open', expectedReplicas: 2, clock: systemClock, onFallback: () => (fallbackFlag = true) }),
      closed: new ResilientStore(primary, { mode: 'closed', expectedReplicas: 2, clock: systemClock, onFallback: () => (fallbackFlag = true) }),
      local: new ResilientStore(primary, { mode: 'local', local, expectedReplicas: 2, clock: systemClock, onFallback: () => (fallbackFlag = true) }),
    };
    const key = counterKey('rl:outage:', 'd', [{ key: 'k', value: String(process.pid) }], 'fixed_window', 3_600_000);
    // a large limit: while Redis is up every mode admits, so an answer tells who gave it
    const check: LimitCheck = { key, algorithm: 'fixed_window', limit: 1_000_000, windowMs: 3_600_000, burst: 1, hits: 1, enforce: true };

    const answers: Answer[] = [];
    let phase: 'up' | 'down' | 'back' = 'up';
    const downAnswers: Answer[] = [];
    let running = true;
    const load = (async () => {
      while (running) {
        const batch = (['open', 'closed', 'local'] as const).map(async (mode) => {
          const deadlineMs = Date.now() + DEADLINE_MS;
          const [o] = await stores[mode].apply([check], systemClock.nowMs(), { deadlineMs });
          const answer = { mode, allowed: o!.allowed, late: Date.now() - deadlineMs };
          answers.push(answer);
          if (phase === 'down') downAnswers.push(answer);
        });
        await Promise.all([...batch, sleep(5)]);
      }
    })();

    await sleep(200);
    await redis.stopRedis();
    phase = 'down'; // from the moment the server process has exited
    await sleep(600);
    expect(primary.isReady()).toBe(false);
    expect(stores.closed.isReady()).toBe(false);
    expect(stores.open.isReady()).toBe(true);
    phase = 'back';
    await redis.restart();
    const back = Date.now();
    // probe sequentially: the first request answered without a fallback was answered by Redis
    let servedAfter = -1;
    while (Date.now() - back < 3000) {
      fallbackFlag = false;
      const [o] = await stores.closed.apply([check], systemClock.nowMs(), { deadlineMs: Date.now() + DEADLINE_MS });
      if (!fallbackFlag && o!.allowed) {
        servedAfter = Date.now() - back;
        break;
      }
      await sleep(10);
    }
    running = false;
    await load;
    await local.close();

    expect(servedAfter).toBeGreaterThanOrEqual(0);
    expect(servedAfter).toBeLessThanOrEqual(1000);
    expect(
      answers.every((a) => a.late <= 0),
      JSON.stringify(answers.filter((a) => a.late > 0)),
    ).toBe(true);
    const down = (mode: FailureMode): Answer[] => downAnswers.filter((a) => a.mode === mode);
    for (const mode of ['open', 'closed', 'local'] as const) expect(down(mode).length).toBeGreaterThan(20);
    expect(down('open').every((a) => a.allowed)).toBe(true);
    expect(down('closed').every((a) => !a.allowed)).toBe(true);
    expect(down('local').every((a) => a.allowed)).toBe(true);
    expect(unhandled).toEqual([]);
    // the outage was logged, not once per request
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.length).toBeLessThan(10);
  });
});
