/** Counters and bans survive a reload that changes the throttling of a rule (memory and Redis). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterStore } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { admitted, engine } from './engine.js';

const rules = (throttling: string, extra = '') => `domain: r
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: sliding_window_counter, throttling: ${throttling}${extra}}
`;

let single: RedisStoreHandle;
beforeAll(async () => void (single = await startRedisStore('single')), 60_000);
afterAll(async () => {
  await single?.store.close();
  await single?.stop();
});

describe.each(['memory', 'redis'])('on %s', (name) => {
  const store = (): CounterStore => (name === 'memory' ? new MemoryStore({ maxKeys: 1000 }) : single.store);

  it('keeps the count when soft becomes hard and back, and when the limit changes', async () => {
    const e = engine(store(), rules('{soft: 50%}'), 'r');
    expect(await admitted(e, 12, [['user', 'a']])).toBe(12);
    e.reload(rules('hard'));
    expect(await admitted(e, 5, [['user', 'a']])).toBe(0); // 12 counted, over 10
    e.reload(rules('{soft: 50%}'));
    expect(await admitted(e, 5, [['user', 'a']])).toBe(3); // up to 15
    e.reload(rules('{elastic: {capacity: 100, max: 20}}'));
    expect(await admitted(e, 10, [['user', 'a']])).toBe(5); // up to max 20
  });

  it('keeps a ban across a reload, and a reload without ban stops honouring it', async () => {
    const e = engine(store(), rules('hard', ', ban: 2h'), 'r');
    expect(await admitted(e, 11, [['user', 'b']])).toBe(10); // the 11th starts the ban
    e.clock.advance(7_200_000 - 1000); // the hits have slid out of the window: only the ban rejects
    e.reload(rules('hard', ', ban: 3h')); // a new length applies to new bans, not to the one running
    expect((await e.ask([['user', 'b']])).statuses[0]).toMatchObject({ code: 'OVER_LIMIT', durationUntilResetMs: 1000 });
    e.reload(rules('hard'));
    expect((await e.ask([['user', 'b']])).overallCode).toBe('OK');
  });
});
