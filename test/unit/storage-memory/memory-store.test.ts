import { afterEach, describe, expect, it } from 'vitest';
import type { AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import { check, MINUTE, T0 } from './checks.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';

let store: MemoryStore;
afterEach(async () => {
  await store.close();
});

describe('MemoryStore batch contract', () => {
  it('counts an admitted batch on every limit and reports remaining after the commit', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    const out = await store.apply([check('a', 3), check('b', 5, { hits: 2 })], T0);
    expect(out).toEqual([
      { allowed: true, remaining: 2, resetMs: MINUTE },
      { allowed: true, remaining: 3, resetMs: MINUTE },
    ]);
  });

  it('a rejected batch consumes nothing from any of its limits', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    await store.apply([check('day', 1)], T0); // 'day' is now used up
    const out = await store.apply([check('second', 5), check('day', 1)], T0 + 1);
    expect(out.map((o) => o.allowed)).toEqual([true, false]);
    expect(out[0]!.remaining).toBe(5); // not committed: the quota as it stands
    const again = await store.apply([check('second', 5, { hits: 0 })], T0 + 2);
    expect(again[0]!.remaining).toBe(5);
  });

  it('a shadow (enforce = false) rejection does not veto the batch and is not counted', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    await store.apply([check('shadow', 1)], T0);
    const out = await store.apply([check('real', 5), check('shadow', 1, { enforce: false })], T0 + 1);
    expect(out).toEqual([
      { allowed: true, remaining: 4, resetMs: MINUTE - 1 },
      { allowed: false, remaining: 0, resetMs: MINUTE - 1 },
    ]);
    const real = await store.apply([check('real', 5, { hits: 0 })], T0 + 2);
    expect(real[0]!.remaining).toBe(4);
  });

  it('hits = 0 checks without counting, and is rejected only when already over', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    const probe = check('k', 2, { hits: 0 });
    expect((await store.apply([probe], T0))[0]).toEqual({ allowed: true, remaining: 2, resetMs: MINUTE });
    expect(store.size).toBe(0); // nothing stored for a check
    await store.apply([check('k', 2, { hits: 2 })], T0);
    expect((await store.apply([probe], T0))[0]).toMatchObject({ allowed: true, remaining: 0 });
    // a lowered limit (config reload keeps the count): 2 > 1 is over
    expect((await store.apply([check('k', 1, { hits: 0 })], T0))[0]).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('counts checks of the same key in one batch one after the other', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    await store.apply([check('k', 3, { hits: 2 })], T0);
    const out = await store.apply([check('k', 3), check('k', 3, { enforce: false })], T0);
    expect(out.map((o) => o.allowed)).toEqual([true, false]);
    const after = await store.apply([check('k', 3, { hits: 0 })], T0);
    expect(after[0]!.remaining).toBe(0);
  });

  it('runs every algorithm through the same contract', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    const names: AlgorithmName[] = ['fixed_window', 'sliding_window_log', 'sliding_window_counter', 'token_bucket', 'leaky_bucket'];
    for (const algorithm of names) {
      const c = check(`k-${algorithm}`, 2, { algorithm, burst: 2 });
      const results = [];
      for (let i = 0; i < 3; i++) results.push((await store.apply([c], T0))[0]!.allowed);
      expect({ algorithm, results }).toEqual({ algorithm, results: [true, true, false] });
    }
  });
});

describe('MemoryStore memory bounds', () => {
  it('drops a state once its ttl has passed (lazily on read)', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    await store.apply([check('k', 1)], T0 + 59_000);
    expect((await store.apply([check('k', 1)], T0 + 59_999))[0]!.allowed).toBe(false);
    expect((await store.apply([check('k', 1, { hits: 0 })], T0 + MINUTE))[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.size).toBe(0);
  });

  it('frees idle expired keys with the incremental sweep, a few per call', async () => {
    store = new MemoryStore({ maxKeys: 10_000 });
    for (let i = 0; i < 1_000; i++) await store.apply([check(`idle-${i}`, 5)], T0);
    expect(store.size).toBe(1_000);
    let calls = 0;
    while (store.size > 1 && calls < 1_000) {
      await store.apply([check('busy', 1_000_000)], T0 + MINUTE + calls);
      calls++;
    }
    expect(store.size).toBe(1); // only 'busy' is left
    expect(calls).toBeGreaterThan(10); // bounded work per call: it took many calls
  });

  it('never holds more than maxKeys, evicting expired entries before live ones', async () => {
    store = new MemoryStore({ maxKeys: 3 });
    await store.apply([check('old', 5, { windowMs: 1_000 })], T0); // expires at T0 + 1000
    await store.apply([check('a', 5)], T0 + 1);
    await store.apply([check('b', 5)], T0 + 2);
    await store.apply([check('c', 5)], T0 + 2_000); // full: 'old' has expired and goes first
    expect(store.size).toBe(3);
    const counts = await store.apply([check('a', 5, { hits: 0 }), check('b', 5, { hits: 0 })], T0 + 2_001);
    expect(counts.map((o) => o.remaining)).toEqual([4, 4]); // both kept
  });

  it('when full, frees expired entries rather than live ones, even beyond what the sweep reached', async () => {
    store = new MemoryStore({ maxKeys: 100 });
    // the least recently used keys are live ones, so evicting by recency alone would lose them
    for (let i = 0; i < 10; i++) await store.apply([check(`long-${i}`, 5)], T0);
    for (let i = 0; i < 50; i++) await store.apply([check(`short-${i}`, 5, { windowMs: 1_000 })], T0);
    for (let i = 10; i < 50; i++) await store.apply([check(`long-${i}`, 5)], T0 + 1);
    // one batch of 40 new keys: the sweep frees at most 16 per call, the rest must come from eviction
    const fresh = Array.from({ length: 40 }, (_, i) => check(`new-${i}`, 5));
    await store.apply(fresh, T0 + 2_000);
    expect(store.size).toBeLessThanOrEqual(100);
    const longs = await store.apply(
      Array.from({ length: 50 }, (_, i) => check(`long-${i}`, 5, { hits: 0 })),
      T0 + 2_001,
    );
    expect(longs.every((o) => o.remaining === 4)).toBe(true); // no live key was evicted
  });

  it('evicts the least recently used live entry when nothing has expired', async () => {
    store = new MemoryStore({ maxKeys: 3 });
    for (const k of ['a', 'b', 'c']) await store.apply([check(k, 5)], T0);
    await store.apply([check('a', 5)], T0 + 1); // 'a' used again: 'b' is now the least recent
    await store.apply([check('d', 5)], T0 + 2);
    expect(store.size).toBe(3);
    const out = await store.apply(
      ['a', 'b', 'c', 'd'].map((k) => check(k, 5, { hits: 0 })),
      T0 + 3,
    );
    expect(out.map((o) => o.remaining)).toEqual([3, 5, 4, 4]); // 'b' started afresh
  });

  it('holds many keys independently', async () => {
    store = new MemoryStore({ maxKeys: 50_000 });
    for (let i = 0; i < 20_000; i++) await store.apply([check(`user-${i}`, 2, { hits: 1 + (i % 2) })], T0);
    expect(store.size).toBe(20_000);
    const out = await store.apply([check('user-10', 2, { hits: 0 }), check('user-11', 2, { hits: 0 })], T0 + 5);
    expect(out.map((o) => o.remaining)).toEqual([1, 0]);
  });
});

describe('MemoryStore lifecycle', () => {
  it('validates maxKeys, is ready until closed, then refuses to answer', async () => {
    expect(() => new MemoryStore({ maxKeys: 0 })).toThrow(RangeError);
    store = new MemoryStore({ maxKeys: 1 });
    expect(store.kind).toBe('memory');
    expect(store.isReady()).toBe(true);
    await store.close();
    expect(store.isReady()).toBe(false);
    await expect(store.apply([check('k', 1)], T0)).rejects.toThrow(/closed/);
  });
});
