/**
 * The memory store's bounds (keys and bytes) and its eviction order: a key that is over its limit is never
 * evicted while an expired or under-limit key can go (flooding new keys must not evict it
 * and hand it fresh quota).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { check, MINUTE, T0 } from './checks.js';
import { ENTRY_BYTES, MemoryStore, entryBytes } from '../../../src/storage/memory/memory-store.js';

let store: MemoryStore;
afterEach(async () => {
  await store.close();
});

async function allowed(c: LimitCheck, now: number): Promise<boolean> {
  return (await store.apply([c], now))[0]!.allowed;
}

describe('MemoryStore eviction cannot be used to bypass a limit', () => {
  it('flooding 1,000 new keys (MEMORY_MAX_KEYS=1000) does not evict an over-limit key', async () => {
    store = new MemoryStore({ maxKeys: 1000 });
    expect(await allowed(check('victim', 1), T0)).toBe(true);
    expect(await allowed(check('victim', 1), T0 + 1)).toBe(false);
    for (let i = 0; i < 1000; i++) await store.apply([check(`flood-${i}`, 100)], T0 + 2);
    expect(await allowed(check('victim', 1), T0 + 3)).toBe(false);
    expect(store.size).toBeLessThanOrEqual(1000);
    expect(store.stats()).toMatchObject({ protectedKeys: 1, evicted: 1 }); // 1,001 keys into 1,000 slots
  });

  it('a key rejected with nothing left (a lowered limit) becomes protected too', async () => {
    store = new MemoryStore({ maxKeys: 10 });
    await store.apply([check('k', 5, { hits: 3 })], T0); // 2 left: evictable
    expect(await allowed(check('k', 3), T0 + 1)).toBe(false); // limit lowered to 3 by a reload: over
    for (let i = 0; i < 50; i++) await store.apply([check(`flood-${i}`, 100)], T0 + 2);
    expect(await allowed(check('k', 3), T0 + 3)).toBe(false);
  });

  it('a key repeated in a rejected batch keeps its stored quota and stays evictable', async () => {
    store = new MemoryStore({ maxKeys: 1 });
    await store.apply([check('k', 2)], T0); // 1 left
    // The second check sees the first's hit (nothing left) and rejects the batch: the stored state keeps 1.
    const outcomes = await store.apply([check('k', 2), check('k', 2)], T0 + 1);
    expect(outcomes.map((o) => o.allowed)).toEqual([true, false]);
    expect(store.stats().protectedKeys).toBe(0);
    expect(await allowed(check('other', 5), T0 + 2)).toBe(true);
    expect(store.stats()).toMatchObject({ keys: 1, evicted: 1, unstored: 0 });
  });

  it('evicts under-limit keys, least recently used first, before any over-limit one', async () => {
    store = new MemoryStore({ maxKeys: 4 });
    await store.apply([check('over', 1)], T0);
    await store.apply([check('a', 5)], T0 + 1);
    await store.apply([check('b', 5)], T0 + 2);
    await store.apply([check('c', 5)], T0 + 3);
    await store.apply([check('a', 5, { hits: 0 })], T0 + 4); // 'a' used again: 'b' is the oldest ordinary
    await store.apply([check('d', 5)], T0 + 5);
    const out = await store.apply(
      ['over', 'a', 'b', 'c', 'd'].map((k) => check(k, k === 'over' ? 1 : 5, { hits: 0 })),
      T0 + 6,
    );
    expect(out.map((o) => o.remaining)).toEqual([0, 4, 5, 4, 4]); // only 'b' started afresh
  });

  it('frees an expired over-limit key like any expired one, and a protected key that regains quota is ordinary again', async () => {
    store = new MemoryStore({ maxKeys: 2 });
    await store.apply([check('over', 1, { windowMs: 1_000 })], T0);
    await store.apply([check('long', 1)], T0); // exhausted too, for a minute
    expect(store.stats().protectedKeys).toBe(2);
    expect(await allowed(check('new', 5), T0 + 1_000)).toBe(true); // 'over' has expired: it makes room
    expect(store.stats()).toMatchObject({ keys: 2, protectedKeys: 1, unstored: 0 });
    await store.apply([check('long', 2)], T0 + 2_000); // limit raised: 0 left again → still protected
    await store.apply([check('long', 5)], T0 + MINUTE); // next window, 4 left → ordinary
    expect(store.stats().protectedKeys).toBe(0);
  });

  it('when every key is over its limit and unexpired, a new key is decided on a fresh state but not stored', async () => {
    store = new MemoryStore({ maxKeys: 3 });
    for (const k of ['x', 'y', 'z']) await store.apply([check(k, 1)], T0);
    const out = await store.apply([check('new', 2)], T0 + 1);
    expect(out[0]).toEqual({ allowed: true, remaining: 1, resetMs: MINUTE - 1 });
    expect(store.stats()).toMatchObject({ keys: 3, protectedKeys: 3, unstored: 1, evicted: 0 });
    for (const k of ['x', 'y', 'z']) expect(await allowed(check(k, 1), T0 + 2)).toBe(false); // nothing lost
    // once they expire, new keys are stored again
    await store.apply([check('new', 2)], T0 + MINUTE);
    expect(store.stats()).toMatchObject({ keys: 1, unstored: 1 });
  });
});

describe('MemoryStore byte bound', () => {
  it('holds keys of ~1 KB within maxBytes, however many arrive', async () => {
    const maxBytes = 200_000;
    store = new MemoryStore({ maxKeys: 1_000_000, maxBytes });
    for (let i = 0; i < 2_000; i++) await store.apply([check(`${'v'.repeat(1_000)}-${i}`, 100)], T0);
    const stats = store.stats();
    expect(stats.bytes).toBeLessThanOrEqual(maxBytes);
    const perKey = entryBytes(`${'v'.repeat(1_000)}-1000`, 'fixed_window', { start: T0, count: 1 });
    expect(perKey).toBe(ENTRY_BYTES + 1_005);
    expect(stats.keys).toBe(Math.floor(maxBytes / perKey));
    expect(stats.bytes).toBe(stats.keys * perKey);
  });

  it('accounts a sliding_window_log state by its size, as it grows and when it is freed', async () => {
    store = new MemoryStore({ maxKeys: 100, maxBytes: 1_000_000 });
    const log = (hits: number): LimitCheck => check('log', 1_000, { algorithm: 'sliding_window_log', hits });
    await store.apply([log(1)], T0);
    const small = store.stats().bytes;
    for (let i = 1; i <= 200; i++) await store.apply([log(1)], T0 + i);
    const big = store.stats().bytes;
    expect(big).toBeGreaterThan(small + 200 * 24 - 1); // three 8-byte numbers per logged request
    await store.apply([check('other', 1, { hits: 0 })], T0 + 2 * MINUTE); // nothing read 'log'
    for (let i = 0; i < 20; i++) await store.apply([check('other', 1, { hits: 0 })], T0 + 2 * MINUTE); // the sweep frees it
    expect(store.stats()).toMatchObject({ keys: 0, bytes: 0 });
  });

  it('validates maxBytes', () => {
    expect(() => new MemoryStore({ maxKeys: 1, maxBytes: 0 })).toThrow(/maxBytes/);
    expect(() => new MemoryStore({ maxKeys: 1, maxBytes: 1.5 })).toThrow(/maxBytes/);
    store = new MemoryStore({ maxKeys: 1, maxBytes: 10 });
  });

  it('a key larger than maxBytes alone is decided but never stored, and evicts nothing', async () => {
    store = new MemoryStore({ maxKeys: 10, maxBytes: ENTRY_BYTES + 100 });
    await store.apply([check('small', 5)], T0);
    expect(await allowed(check('k'.repeat(200), 5), T0)).toBe(true);
    expect(store.stats()).toMatchObject({ keys: 1, unstored: 1, evicted: 0 });
  });
});
