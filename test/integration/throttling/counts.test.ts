/**
 * Exact counts of each throttling mode, through the real engine (RateLimiter) on every store (memory, Redis standalone,
 * Redis Sentinel, Redis Cluster), with a FakeClock: each throttling mode on every algorithm where it applies.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CounterStore } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { BANNED_HEADER, ELASTIC_BORROWED_HEADER, SOFT_EXCEEDED_HEADER, SOFT_WARNING_HEADER } from '../../../src/throttling/report.js';
import { startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { admitted, engine, header } from './engine.js';

const WINDOWS = ['fixed_window', 'sliding_window_log', 'sliding_window_counter'] as const;
const ALL = [...WINDOWS, 'token_bucket', 'leaky_bucket'] as const;
const burst = (a: string, b: number) => (a.endsWith('bucket') ? `, burst: ${b}` : '');

const RULES = `domain: thr
descriptors:
${WINDOWS.map(
  (a) => `  - key: soft
    value: ${a}
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: ${a}, throttling: {soft: 10%}}
  - key: warn
    value: ${a}
    rate_limit: {unit: hour, requests_per_unit: 100, soft_requests_per_unit: 80, algorithm: ${a}}
  - key: elastic_${a}
    rate_limit: {unit: hour, requests_per_unit: 10, algorithm: ${a}, throttling: {elastic: {capacity: 40, max: 15}}}`,
).join('\n')}
${ALL.map(
  (a) => `  - key: ban
    value: ${a}
    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: ${a}${burst(a, 5)}, ban: 1h}
  - key: shares
    value: ${a}
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: ${a}${burst(a, 100)}, shares: {critical: 100%, default: 80%, sheddable: 50%}}`,
).join('\n')}
`;

const stores: Record<string, () => CounterStore> = {};
let handles: RedisStoreHandle[] = [];
beforeAll(async () => {
  handles = await Promise.all([startRedisStore('single'), startRedisStore('sentinel'), startRedisStore('cluster')]);
  stores.memory = () => new MemoryStore({ maxKeys: 100_000 });
  stores.redis = () => handles[0]!.store;
  stores.sentinel = () => handles[1]!.store;
  stores.cluster = () => handles[2]!.store;
}, 60_000);
afterAll(async () => {
  await Promise.all(handles.map((h) => h.store.close()));
  await Promise.all(handles.map((h) => h.stop()));
});

describe.each(['memory', 'redis', 'sentinel', 'cluster'])('on %s', (storeName) => {
  describe.each(WINDOWS)('%s', (algorithm) => {
    it('soft 10% on limit 100 admits exactly 110 of 200, marking the 10 above the limit', async () => {
      const e = engine(stores[storeName]!(), RULES, 'thr');
      const entries = [['soft', algorithm]] as const;
      expect(await admitted(e, 100, entries)).toBe(100);
      const first = await e.ask(entries);
      expect(first.overallCode).toBe('OK');
      expect(first.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 0 });
      expect(header(first, SOFT_EXCEEDED_HEADER)).toBe('"thr.soft_' + algorithm + '";limit=100;over=1');
      expect(await admitted(e, 9, entries)).toBe(9);
      const over = await e.ask(entries);
      expect(over.overallCode).toBe('OVER_LIMIT');
      expect(header(over, SOFT_EXCEEDED_HEADER)).toBeUndefined();
      expect(await admitted(e, 89, entries)).toBe(0); // 100 + 1 + 9 + 1 + 89 = 200 sent, 110 admitted
    });

    it('soft_requests_per_unit warns above 80 and within 100, without changing decisions', async () => {
      const e = engine(stores[storeName]!(), RULES, 'thr');
      const entries = [['warn', algorithm]] as const;
      const warned: number[] = [];
      for (let i = 1; i <= 101; i++) {
        const d = await e.ask(entries);
        expect(d.overallCode).toBe(i <= 100 ? 'OK' : 'OVER_LIMIT');
        if (header(d, SOFT_WARNING_HEADER) !== undefined) warned.push(i);
      }
      expect(warned).toEqual(Array.from({ length: 20 }, (_, i) => 81 + i));
      expect(header(await e.ask(entries), SOFT_WARNING_HEADER)).toBeUndefined();
    });

    it('elastic admits a client up to max while the aggregate is under capacity, and stops at whichever comes first', async () => {
      const e = engine(stores[storeName]!(), RULES, 'thr');
      const key = `elastic_${algorithm}`;
      // L 10, max 15, capacity 40: a and b borrow 5 each (aggregate 15, 30), c fills its own 10 (40), d
      // its own 10 (aggregate 50: own limits always hold), and neither c nor d may borrow.
      expect(await admitted(e, 20, [[key, 'a']])).toBe(15);
      expect(await admitted(e, 20, [[key, 'b']])).toBe(15);
      expect(await admitted(e, 20, [[key, 'c']])).toBe(10);
      expect(await admitted(e, 20, [[key, 'd']])).toBe(10);
      const e2 = engine(stores[storeName]!(), RULES, 'thr');
      for (let i = 1; i <= 10; i++) expect(header(await e2.ask([[key, 'x']]), ELASTIC_BORROWED_HEADER)).toBeUndefined();
      const borrowed = await e2.ask([[key, 'x']]);
      expect(borrowed.statuses[0]).toMatchObject({ code: 'OK', limitRemaining: 0 });
      expect(header(borrowed, ELASTIC_BORROWED_HEADER)).toBe(`"thr.${key}";limit=10;max=15`);
    });
  });

  describe.each(ALL)('%s', (algorithm) => {
    it('a ban outlasts the window and ends exactly when it should, rejecting without counting', async () => {
      const e = engine(stores[storeName]!(), RULES, 'thr');
      const entries = [['ban', algorithm]] as const;
      expect(await admitted(e, 5, entries)).toBe(5);
      const start = e.clock.nowMs();
      const banned = await e.ask(entries);
      expect(banned.overallCode).toBe('OVER_LIMIT');
      expect(banned.statuses[0]!.durationUntilResetMs).toBe(3_600_000);
      expect(header(banned, 'retry-after') ?? '3600').toBe('3600');
      e.clock.advance(120_000); // two windows later: the limit alone would admit again
      const still = await e.ask(entries);
      expect(still.overallCode).toBe('OVER_LIMIT');
      expect(still.statuses[0]!.durationUntilResetMs).toBe(3_480_000);
      expect(header(still, BANNED_HEADER)).toBe(`"thr.ban_${algorithm}";t=3480`);
      e.clock.set(start + 3_600_000 - 1);
      expect((await e.ask(entries)).statuses[0]).toMatchObject({ code: 'OVER_LIMIT', durationUntilResetMs: 1 });
      e.clock.set(start + 3_600_000);
      // Banned requests counted nothing: the full limit is there when the ban ends.
      expect(await admitted(e, 5, entries)).toBe(5);
    });

    it('criticality shares admit exactly 50 sheddable, then 80 default, then 100 critical of a burst in that order', async () => {
      const e = engine(stores[storeName]!(), RULES, 'thr');
      const as = (c: string) =>
        [
          ['criticality', c],
          ['shares', algorithm],
        ] as const;
      expect(await admitted(e, 100, as('sheddable'))).toBe(50);
      expect(await admitted(e, 100, as('DEFAULT'))).toBe(30);
      expect(await admitted(e, 100, as('critical'))).toBe(20);
      // one class on a fresh counter each: its share of the limit exactly
      for (const [c, n] of [
        ['sheddable', 50],
        ['default', 80],
        ['critical', 100],
        ['unknown', 80],
      ] as const) {
        const fresh = engine(stores[storeName]!(), RULES, 'thr');
        expect(await admitted(fresh, 120, as(c))).toBe(n);
      }
    });
  });
});
