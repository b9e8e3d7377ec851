/**
 * Conformance: random request traces (seeded, so a failure replays) give identical outcomes from
 * - a reference model written here from the pure algorithms (getAlgorithm(name).evaluate) and the batch
 *   contract of counter-store.ts,
 * - the MemoryStore,
 * - Redis standalone and Redis Cluster (the Lua fragments inside batch.lua), with up to four requests in one
 *   event-loop turn, which the Redis store decides in one script call (cross-request batching).
 * Times, hits, limits, bursts, windows, shadow mode, hits counted past the limit (countOver) and batch shapes
 * are random; a few steps use parameters
 * near the exactness bounds (large limits and windows) to reach the long-arithmetic paths.
 *
 * Fake time runs much faster than real time here, so a Redis TTL (real time) never ends before the state's
 * own time says it should; the algorithms decide by the times in their state, not by expiry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counterKey } from '../../../src/vocab/keys.js';
import { getAlgorithm, paramsError } from '../../../src/algorithms/registry.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { CounterStore, LimitCheck, LimitOutcome } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { keySlot } from '../../../src/storage/redis/slot.js';
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { prng, type Prng } from '../../support/prng.js';

/** The batch contract, straight from counter-store.ts, over the pure algorithms (repeated keys in order). */
class ReferenceModel {
  private readonly states = new Map<string, unknown>();
  apply(checks: readonly LimitCheck[], nowMs: number): LimitOutcome[] {
    const pending = new Map<string, unknown>();
    let admitted = true;
    const evaluated = checks.map((c) => {
      const state = pending.has(c.key) ? pending.get(c.key) : this.states.get(c.key);
      const e = getAlgorithm(c.algorithm).evaluate(state, nowMs, { limit: c.limit, windowMs: c.windowMs, burst: c.burst }, c.hits);
      if (!e.outcome.allowed && c.enforce) admitted = false;
      if ((e.outcome.allowed || c.countOver !== undefined) && c.hits > 0) pending.set(c.key, e.next);
      return e.outcome;
    });
    if (admitted) for (const [k, s] of pending) this.states.set(k, s);
    else {
      // countOver 'always' (count_every_hit): counted on a rejected batch too, one after the other.
      for (const c of checks) {
        if (c.countOver !== 'always' || c.hits === 0) continue;
        const e = getAlgorithm(c.algorithm).evaluate(this.states.get(c.key), nowMs, { limit: c.limit, windowMs: c.windowMs, burst: c.burst }, c.hits);
        this.states.set(c.key, e.next);
      }
    }
    return evaluated.map((o, i) => {
      const c = checks[i]!;
      const committed = admitted && (o.allowed || c.countOver !== undefined) && c.hits > 0;
      return { allowed: o.allowed, remaining: committed ? (o.allowed ? o.remainingIfCommitted : 0) : o.remainingIfNotCommitted, resetMs: o.resetMs };
    });
  }
}

interface KeySpec {
  readonly key: string;
  readonly algorithm: AlgorithmName;
  readonly windowMs: number;
  readonly big: boolean;
}

function keySpecs(random: Prng, run: string): KeySpec[] {
  const specs: KeySpec[] = [];
  for (let i = 0; i < 12; i++) {
    const algorithm = ALGORITHM_NAMES[i % ALGORITHM_NAMES.length]!;
    const big = i >= 10;
    const windowMs = big ? random.pick([31_536_000_000, 34_359_738_368]) : random.pick([1000, 1500, 7_000, 60_000]);
    const descriptor = [{ key: 'k', value: `${run}-${i % 7}` }]; // some descriptors carry several limits
    specs.push({ key: counterKey('rl:conf:', 'd', descriptor, algorithm, windowMs), algorithm, windowMs, big });
  }
  return specs;
}

function randomBatch(random: Prng, specs: readonly KeySpec[]): LimitCheck[] {
  const n = random.pick([1, 1, 1, 2, 2, 3]);
  return Array.from({ length: n }, () => {
    const s = random.pick(specs);
    const limit = s.big ? random.pick([4_294_967_295, 1_000_000_007, 3]) : random.int(0, 6);
    const burst = s.big ? random.pick([1, 4_294_967_295 / 5, 77]) : random.int(1, 6);
    const hits = s.big ? random.pick([0, 1, 1_000_000]) : random.pick([0, 1, 1, 1, 1, 2, 3]);
    const params = { limit, windowMs: s.windowMs, burst: Math.floor(burst) };
    // stay where the algorithms are exact (what config validation enforces)
    const safe = paramsError(s.algorithm, params) === undefined ? params : { ...params, limit: 4_294_967_295, burst: 1 };
    const enforce = random.chance(0.85);
    // counted past the limit: shadow mode ('admitted', never enforced) and count_every_hit ('always')
    const counting = s.algorithm === 'fixed_window' || s.algorithm === 'sliding_window_counter';
    const countOver = !counting
      ? undefined
      : enforce
        ? random.pick([undefined, undefined, 'always' as const])
        : random.pick([undefined, 'admitted' as const, 'always' as const]);
    return { key: s.key, algorithm: s.algorithm, ...safe, hits, enforce, ...(countOver !== undefined ? { countOver } : {}) };
  });
}

const STEPS = 600;
const TRACES = 3;

describe('conformance of the pure algorithms, MemoryStore and Redis on random traces', () => {
  let single: RedisStoreHandle;
  let cluster: RedisStoreHandle;
  beforeAll(async () => {
    [single, cluster] = await Promise.all([startRedisStore('single'), startRedisStore('cluster')]);
  });
  afterAll(() => closeRedisStores(single, cluster));

  it.each(Array.from({ length: TRACES }, (_, i) => i))('trace %i', async (trace) => {
    const random = prng(`conformance-${trace}`);
    const run = `${process.pid}-${Date.now()}-${trace}`;
    const specs = keySpecs(random, run);
    const model = new ReferenceModel();
    const stores: [string, CounterStore][] = [
      ['memory', new MemoryStore({ maxKeys: 10_000 })],
      ['redis', single.store],
      ['cluster', cluster.store],
    ];
    let now = 1_700_000_000_000 + random.int(0, 86_400_000);
    let lastReal = Date.now();
    const seen = { allowed: 0, rejected: 0, admittedBatches: 0, requests: 0 };
    const before = [single.store.stats(), cluster.store.stats()];
    for (let step = 0; step < STEPS; step++) {
      // Plus the real time since the last step: Redis expires keys in real time (a window's key when the
      // window ends), so fake time must never run slower than real time, or a key would vanish before its
      // state says it should (on a loaded machine a step can take longer than what was left of a window).
      const real = Date.now();
      now += random.pick([0, 0, 1, random.int(0, 400), random.int(0, 3000), random.int(0, 90_000)]) + (real - lastReal);
      lastReal = real;
      // Several requests in one event-loop turn (1 to 4): the Redis store sends them as one script call
      // (cross-request batching), which must decide them in order, each on its own, as the model does.
      // On Cluster a request across slots takes two calls (evaluate, then commit), and requests of the same
      // turn may run between them (best effort across slots, redis-store.ts): it joins a turn only if no other
      // request of it touches one of its slots.
      const drawn = Array.from({ length: random.pick([1, 1, 2, 3, 4]) }, () => randomBatch(random, specs));
      const group: LimitCheck[][] = [];
      const slots: Set<number>[] = [];
      for (const batch of drawn) {
        const mine = new Set(batch.map((c) => keySlot(c.key)));
        if (slots.some((theirs) => (mine.size > 1 || theirs.size > 1) && [...mine].some((x) => theirs.has(x)))) continue;
        group.push(batch);
        slots.push(mine);
      }
      const expected = group.map((batch) => model.apply(batch, now));
      seen.requests += group.length;
      for (const o of expected.flat()) seen[o.allowed ? 'allowed' : 'rejected']++;
      group.forEach((batch, g) => {
        if (expected[g]!.every((o, i) => o.allowed || !batch[i]!.enforce)) seen.admittedBatches++;
      });
      const answers = await Promise.all(stores.map(([, s]) => Promise.all(group.map((batch) => s.apply(batch, now)))));
      answers.forEach((got, i) => {
        expect(got, `${stores[i]![0]} trace ${trace} step ${step} at ${now}: ${JSON.stringify(group)}`).toEqual(expected);
      });
    }
    await stores[0]![1].close();
    // the groups did travel together: fewer script calls than decisions (on Cluster only requests of one slot
    // share a call, and the traces spread their keys over seven slots)
    const [one, many] = [single, cluster].map((h, i) => ({
      calls: h.store.stats().scriptCalls - before[i]!.scriptCalls,
      sent: h.store.stats().scriptBatches - before[i]!.scriptBatches,
    }));
    expect(one!.sent, 'one node').toBeLessThan(0.75 * one!.calls);
    expect(many!.sent, 'Cluster').toBeLessThan(many!.calls);
    // the traces exercise both sides of every decision
    expect(seen.allowed).toBeGreaterThan(STEPS / 4);
    expect(seen.rejected).toBeGreaterThan(STEPS / 10);
    expect(seen.admittedBatches).toBeLessThan(seen.requests);
  });
});
