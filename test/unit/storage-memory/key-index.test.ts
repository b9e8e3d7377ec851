/**
 * The memory store's key → slot index (src/storage/memory/key-index.ts) against a Map on seeded random
 * traces of inserts, deletes, lookups and resizes, at loads up to its 2/3 limit so that long probe runs,
 * wrap-around at the end of the buckets and backward-shift deletion are all exercised.
 */
import { describe, expect, it } from 'vitest';
import { KeyIndex } from '../../../src/storage/memory/key-index.js';

/** mulberry32: a small seeded PRNG, so a failing trace can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function check(index: KeyIndex, model: Map<string, number>, universe: readonly string[]): void {
  expect(index.size).toBe(model.size);
  for (const key of universe) expect(index.find(key), key).toBe(model.get(key) ?? -1);
}

describe('KeyIndex', () => {
  for (const seed of [1, 2, 3, 42, 1234]) {
    it(`matches a Map on a random trace (seed ${seed})`, () => {
      const random = rng(seed);
      let capacity = 8;
      const index = new KeyIndex();
      index.resize(capacity);
      const model = new Map<string, number>();
      const slotKey: (string | undefined)[] = [];
      // few distinct keys so that keys come back after deletion; some share long prefixes, one is non-ASCII
      const universe = Array.from({ length: 300 }, (_, i) =>
        i % 7 === 0 ? `rl:{edge|remote_address=10.0.${i}}:fixed_window:60000` : `k${i}${i % 11 === 0 ? 'é€' : ''}`,
      );
      for (let step = 0; step < 4_000; step++) {
        const r = random();
        const key = universe[Math.floor(random() * universe.length)]!;
        if (r < 0.5 && !model.has(key)) {
          if (model.size === capacity) {
            capacity *= 2;
            if (capacity > 256) capacity = 256;
            if (model.size === capacity) continue;
            index.resize(capacity);
          }
          let slot = 0;
          while (slotKey[slot] !== undefined) slot++;
          index.insert(key, slot);
          slotKey[slot] = key;
          model.set(key, slot);
        } else if (r < 0.85 && model.size > 0) {
          const victim = [...model.keys()][Math.floor(random() * model.size)]!;
          const slot = model.get(victim)!;
          index.delete(slot);
          slotKey[slot] = undefined;
          model.delete(victim);
        } else {
          expect(index.find(key)).toBe(model.get(key) ?? -1);
        }
        if (step % 97 === 0) check(index, model, universe);
      }
      check(index, model, universe);
      expect(index.keys.filter((k) => k !== undefined).sort()).toEqual([...model.keys()].sort());
    });
  }

  it('a full table of 1, 2 or 3 slots still ends every probe (regression: capacity 1 had one bucket, a hang)', () => {
    for (const capacity of [1, 2, 3]) {
      const index = new KeyIndex();
      index.resize(capacity);
      for (let slot = 0; slot < capacity; slot++) index.insert(`key-${slot}`, slot);
      expect(index.find('absent')).toBe(-1);
      for (let slot = 0; slot < capacity; slot++) expect(index.find(`key-${slot}`)).toBe(slot);
      index.delete(0);
      expect(index.find('key-0')).toBe(-1);
    }
  });

  it('finds nothing when empty and after clear()', () => {
    const index = new KeyIndex();
    expect(index.find('a')).toBe(-1);
    index.resize(4);
    index.insert('a', 0);
    index.insert('b', 3);
    expect([index.find('a'), index.find('b'), index.find('c')]).toEqual([0, 3, -1]);
    index.clear();
    expect(index.size).toBe(0);
    expect(index.find('a')).toBe(-1);
  });

  it('keeps its entries across a resize and tells equal strings built differently apart from others', () => {
    const index = new KeyIndex();
    index.resize(2);
    const built = (n: number): string => ['rl:{', 'edge|ip=', String(n), '}'].join('');
    index.insert(built(1), 0);
    index.insert(built(2), 1);
    index.resize(64);
    expect(index.find('rl:{edge|ip=1}')).toBe(0);
    expect(index.find('rl:{edge|ip=2}')).toBe(1);
    expect(index.find('rl:{edge|ip=3}')).toBe(-1);
  });
});
