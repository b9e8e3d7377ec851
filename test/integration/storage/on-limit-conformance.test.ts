/**
 * Conformance of the two halves of on_limit's store-side logic on random seeded traces: the TypeScript half
 * (MemoryStore: apply-batch.ts with on-limit-batch.ts and the meter's delay) and the Lua half (batch.lua with
 * lua/on_limit.lua and lib/meter.lua) on Redis standalone, Sentinel and Cluster (where descriptors on several
 * slots take the two-phase path) must give identical outcomes, delays, degradations and rejection counts.
 * A sibling of conformance.test.ts, which checks the algorithms themselves against a reference model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKey, onLimitKey } from '../../../src/vocab/keys.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { CounterStore, LimitCheck, StoreOnLimit } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { prng, type Prng } from '../../support/prng.js';

interface Spec {
  readonly key: string;
  readonly algorithm: AlgorithmName;
  readonly windowMs: number;
  /** A rule's on_limit is fixed: every check of the key carries the same one. */
  readonly onLimit: StoreOnLimit | undefined;
}

function specs(random: Prng, run: string): Spec[] {
  return Array.from({ length: 10 }, (_, i) => {
    const algorithm = ALGORITHM_NAMES[i % ALGORITHM_NAMES.length]!;
    const windowMs = random.pick([1000, 1500, 7000, 60_000]);
    const key = counterKey('rl:olc:', 'd', [{ key: 'k', value: `${run}-${i % 6}` }], algorithm, windowMs);
    return { key, algorithm, windowMs, onLimit: onLimit(random, key, algorithm) };
  });
}

function onLimit(random: Prng, key: string, algorithm: AlgorithmName): StoreOnLimit | undefined {
  const o: { -readonly [K in keyof StoreOnLimit]: StoreOnLimit[K] } = {};
  if ((algorithm === 'token_bucket' || algorithm === 'leaky_bucket') && random.chance(0.95)) o.maxDelayMs = random.pick([1, 500, 3000, 10_000]);
  else if (random.chance(0.4)) {
    o.degradeKey = onLimitKey(key, 'degrade');
    if (random.chance(0.7)) o.degradeMax = random.int(0, 3);
  }
  if (random.chance(0.5)) {
    o.backoffKey = onLimitKey(key, 'backoff');
    o.backoffTtlMs = random.pick([500, 5000, 60_000, 120_000]);
  }
  return Object.keys(o).length === 0 ? undefined : o;
}

function batch(random: Prng, all: readonly Spec[]): LimitCheck[] {
  return Array.from({ length: random.pick([1, 1, 2, 2, 3]) }, () => {
    const s = random.pick(all);
    const o = s.onLimit;
    return {
      key: s.key,
      algorithm: s.algorithm,
      limit: o?.maxDelayMs !== undefined ? random.pick([1, 2, 3, 5]) : random.pick([0, 1, 2, 2, 3, 5]),
      windowMs: s.windowMs,
      burst: random.int(1, 4),
      hits: random.pick([0, 1, 1, 1, 1, 2]),
      enforce: random.chance(0.9),
      ...(o !== undefined ? { onLimit: o } : {}),
    };
  });
}

const STEPS = 500;

describe('on_limit store logic: MemoryStore (TypeScript) and Redis (Lua) agree on random traces', () => {
  let single: RedisStoreHandle;
  let sentinel: RedisStoreHandle;
  let cluster: RedisStoreHandle;
  beforeAll(async () => {
    [single, sentinel, cluster] = await Promise.all([startRedisStore('single'), startRedisStore('sentinel'), startRedisStore('cluster')]);
  });
  afterAll(() => closeRedisStores(single, sentinel, cluster));

  it.each([0, 1, 2])('trace %i', async (trace) => {
    const random = prng(`on-limit-conformance-${trace}`);
    const all = specs(random, `${process.pid}-${Date.now()}-${trace}`);
    const memory = new MemoryStore({ maxKeys: 10_000 });
    const stores: [string, CounterStore][] = [
      ['redis', single.store],
      ['sentinel', sentinel.store],
      ['cluster', cluster.store],
    ];
    let now = 1_700_000_000_000 + random.int(0, 86_400_000);
    let lastReal = Date.now();
    const seen = { delayed: 0, degraded: 0, backedOff: 0, rejected: 0 };
    for (let step = 0; step < STEPS; step++) {
      // Plus the real time since the last step: Redis expires keys in real time (a window's key when the
      // window ends), so fake time must never run slower than real time, or a key would vanish before its
      // state says it should (on a loaded machine a step can take longer than what was left of a window).
      const real = Date.now();
      now += random.pick([0, 0, 1, random.int(0, 400), random.int(0, 400), random.int(0, 3000), random.int(0, 70_000)]) + (real - lastReal);
      lastReal = real;
      const checks = batch(random, all);
      const expected = await memory.apply(checks, now);
      for (const o of expected) {
        if (o.delayMs !== undefined) seen.delayed++;
        if (o.degraded === true) seen.degraded++;
        if ((o.rejections ?? 0) > 1) seen.backedOff++;
        if (!o.allowed) seen.rejected++;
      }
      const answers = await Promise.all(stores.map(([, s]) => s.apply(checks, now)));
      answers.forEach((got, i) => {
        expect(got, `${stores[i]![0]} trace ${trace} step ${step} at ${now}: ${JSON.stringify(checks)}`).toEqual(expected);
      });
    }
    await memory.close();
    // every path was taken
    expect(seen.delayed).toBeGreaterThan(5);
    expect(seen.degraded).toBeGreaterThan(5);
    expect(seen.backedOff).toBeGreaterThan(5);
    expect(seen.rejected).toBeGreaterThan(STEPS / 10);
  });
});
