/** The over-limit cache and throttling: banned keys are answered locally until the ban ends; elastic rejections are not cached. */
import { describe, expect, it } from 'vitest';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { OverLimitCache } from '../../../src/storage/over-limit-cache.js';

const T = 1_700_000_000_000;
const check = (extra: Partial<LimitCheck> = {}): LimitCheck => ({
  key: 'p:{d|u=a}:fixed_window:60000',
  algorithm: 'fixed_window',
  limit: 1,
  windowMs: 60_000,
  burst: 1,
  hits: 1,
  enforce: true,
  ...extra,
});

describe('OverLimitCache with throttling', () => {
  it('answers a banned key as banned, from the cache, until the ban ends to the ms', async () => {
    const cache = new OverLimitCache(new MemoryStore({ maxKeys: 100 }), { maxEntries: 10 });
    const banned = check({ ban: { ms: 3_600_000, key: 'p:{d|u=a}:fixed_window:60000:ban' } });
    expect((await cache.apply([banned], T))[0]).toMatchObject({ allowed: true });
    expect((await cache.apply([banned], T))[0]).toEqual({ allowed: false, remaining: 0, resetMs: 3_600_000, ban: 'started' });
    expect((await cache.apply([banned], T + 120_000))[0]).toEqual({ allowed: false, remaining: 0, resetMs: 3_480_000, ban: 'active' });
    expect(cache.stats().hits).toBe(1);
    expect((await cache.apply([banned], T + 3_600_000 - 1))[0]).toMatchObject({ allowed: false, resetMs: 1, ban: 'active' });
    expect(cache.stats().hits).toBe(2);
    expect((await cache.apply([banned], T + 3_600_000))[0]).toMatchObject({ allowed: true });
  });

  it('never caches an elastic rejection: borrowing may admit the key before its own reset', async () => {
    const cache = new OverLimitCache(new MemoryStore({ maxKeys: 100 }), { maxEntries: 10 });
    const elastic = check({ elastic: { max: 2, capacity: 0, key: 'p:{%elastic|d|d.u}:fixed_window:60000' } });
    await cache.apply([elastic], T);
    expect((await cache.apply([elastic], T))[0]).toMatchObject({ allowed: false });
    expect((await cache.apply([elastic], T + 1))[0]).toMatchObject({ allowed: false });
    expect(cache.stats()).toEqual({ hits: 0, entries: 0 });
  });
});
