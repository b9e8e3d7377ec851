/**
 * Conformance of the throttling step (ban, elastic) on random traces (seeded, so a failure replays):
 * - a reference model written here from the contract in counter-store.ts (LimitCheck.elastic / .ban) over the
 *   pure algorithms,
 * - the MemoryStore (src/storage/throttling-step.ts),
 * - Redis standalone and Redis Cluster (lua/throttling/step.lua inside batch.lua).
 * Keys of one trace share one hash tag, so on Cluster the aggregate is in the checks' slot and the Lua step
 * reads it itself; some checks carry a pre-read aggregate `use`, or 'ask', instead (the Cluster cross-slot path).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAlgorithm } from '../../../src/algorithms/registry.js';
import { ALGORITHM_NAMES, PARAM_BOUNDS, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { CounterStore, LimitCheck, LimitOutcome } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';
import { prng, type Prng } from '../../support/prng.js';

const AGG = PARAM_BOUNDS.maxLimit;

/** The contract, written again from its words: bans first, own limit, borrowing at max within capacity. */
class ReferenceModel {
  private readonly states = new Map<string, unknown>();
  private readonly bans = new Map<string, number>();
  apply(checks: readonly LimitCheck[], now: number): LimitOutcome[] {
    const pending = new Map<string, unknown>();
    const state = (k: string) => (pending.has(k) ? pending.get(k) : this.states.get(k));
    let admitted = true;
    type Row = {
      allowed: boolean;
      ifC: number;
      ifN: number;
      reset: number;
      hits: number;
      borrowed?: boolean;
      ban?: 'active' | 'started';
      needsAggregate?: boolean;
    };
    const rows = checks.map((c): Row => {
      const banEnd = c.ban === undefined ? undefined : this.bans.get(c.ban.key);
      if (banEnd !== undefined && banEnd > now) {
        if (c.enforce) admitted = false;
        return { allowed: false, ifC: 0, ifN: 0, reset: banEnd - now, hits: c.hits, ban: 'active' };
      }
      const alg = getAlgorithm(c.algorithm);
      const p = { limit: c.limit, windowMs: c.windowMs, burst: c.burst };
      const own = alg.evaluate(state(c.key), now, p, c.hits);
      let row: Row = {
        allowed: own.outcome.allowed,
        ifC: own.outcome.remainingIfCommitted,
        ifN: own.outcome.remainingIfNotCommitted,
        reset: own.outcome.resetMs,
        hits: c.hits,
      };
      let next = own.next;
      const e = c.elastic;
      const agg = () =>
        e!.use !== undefined ? undefined : getAlgorithm(e!.algorithm ?? c.algorithm).evaluate(state(e!.key), now, { ...p, limit: AGG }, c.hits);
      if (e && !row.allowed) {
        const atMax = alg.evaluate(state(c.key), now, { ...p, limit: e.max }, c.hits);
        if (atMax.outcome.allowed && e.use === 'ask') {
          // the use is needed and not known: rejected, vetoing the batch whatever enforce says, no ban
          admitted = false;
          return { ...row, needsAggregate: true };
        }
        if (atMax.outcome.allowed) {
          const a = agg();
          const use = a === undefined ? (e.use as number) : AGG - a.outcome.remainingIfNotCommitted;
          if (use + c.hits <= e.capacity) {
            row = { ...row, allowed: true, ifC: 0, reset: atMax.outcome.resetMs, borrowed: true };
            next = atMax.next;
          }
        }
      }
      if (row.allowed && c.hits > 0) {
        pending.set(c.key, next);
        const a = e ? agg() : undefined;
        if (a?.outcome.allowed) pending.set(e!.key, a.next);
      }
      if (!row.allowed && c.ban && c.enforce && c.hits > 0) {
        this.bans.set(c.ban.key, now + c.ban.ms);
        row = { ...row, reset: Math.max(row.reset, c.ban.ms), ban: 'started' };
      }
      if (!row.allowed && c.enforce) admitted = false;
      return row;
    });
    if (admitted) for (const [k, s] of pending) this.states.set(k, s);
    return rows.map((r) => ({
      allowed: r.allowed,
      remaining: admitted && r.allowed && r.hits > 0 ? r.ifC : r.ifN,
      resetMs: r.reset,
      ...(r.borrowed ? { borrowed: true } : {}),
      ...(r.ban !== undefined ? { ban: r.ban } : {}),
      ...(r.needsAggregate ? { needsAggregate: true } : {}),
    }));
  }
}

interface Spec {
  readonly key: string;
  readonly algorithm: AlgorithmName;
  readonly windowMs: number;
}

function randomBatch(random: Prng, specs: readonly Spec[], tag: string): LimitCheck[] {
  return Array.from({ length: random.pick([1, 1, 2, 3]) }, () => {
    const s = random.pick(specs);
    const limit = random.int(0, 6);
    const windowed = !s.algorithm.endsWith('bucket');
    // the engine counts a sliding_window_log rule's aggregate with sliding_window_counter (throttling/plan.ts)
    const aggregate: AlgorithmName = s.algorithm === 'sliding_window_log' && random.chance(0.7) ? 'sliding_window_counter' : s.algorithm;
    const check: LimitCheck = {
      key: s.key,
      algorithm: s.algorithm,
      limit,
      windowMs: s.windowMs,
      burst: random.int(1, 6),
      hits: random.pick([0, 1, 1, 1, 2]),
      enforce: random.chance(0.85),
      ...(windowed && random.chance(0.5)
        ? {
            elastic: {
              max: limit + random.int(1, 4),
              capacity: random.int(0, 14),
              key: `rl:tconf:{${tag}}:agg${random.int(0, 1)}:${aggregate}:${s.windowMs}`,
              ...(aggregate !== s.algorithm ? { algorithm: aggregate } : {}),
              ...(random.chance(0.3) ? { use: random.chance(0.5) ? ('ask' as const) : random.int(0, 14) } : {}),
            },
          }
        : {}),
      ...(random.chance(0.35) ? { ban: { ms: random.pick([1000, 4000, 60_000]), key: `${s.key}:ban` } } : {}),
    };
    return check;
  });
}

const STEPS = 500;

describe('throttling conformance: reference model, MemoryStore and Redis on random traces', () => {
  let single: RedisStoreHandle;
  let cluster: RedisStoreHandle;
  beforeAll(async () => {
    [single, cluster] = await Promise.all([startRedisStore('single'), startRedisStore('cluster')]);
  }, 60_000);
  afterAll(() => closeRedisStores(single, cluster));

  it.each([0, 1, 2])('trace %i', async (trace) => {
    const random = prng(`throttling-conformance-${trace}`);
    const tag = `${process.pid}-${Date.now()}-${trace}`;
    const specs: Spec[] = Array.from({ length: 8 }, (_, i) => {
      const algorithm = ALGORITHM_NAMES[i % ALGORITHM_NAMES.length]!;
      const windowMs = random.pick([1000, 7000, 60_000]);
      return { key: `rl:tconf:{${tag}}:c${i % 6}:${algorithm}:${windowMs}`, algorithm, windowMs };
    });
    const model = new ReferenceModel();
    const stores: [string, CounterStore][] = [
      ['memory', new MemoryStore({ maxKeys: 10_000 })],
      ['redis', single.store],
      ['cluster', cluster.store],
    ];
    let now = 1_700_000_000_000 + random.int(0, 86_400_000);
    let lastReal = Date.now();
    const seen = { borrowed: 0, banned: 0, started: 0, rejected: 0, asked: 0 };
    for (let step = 0; step < STEPS; step++) {
      // Plus the real time since the last step: Redis expires keys in real time (a window's key when the
      // window ends), so fake time must never run slower than real time, or a key would vanish before its
      // state says it should (on a loaded machine a step can take longer than what was left of a window).
      const real = Date.now();
      now += random.pick([0, 0, 1, random.int(0, 400), random.int(0, 3000), random.int(0, 20_000)]) + (real - lastReal);
      lastReal = real;
      const batch = randomBatch(random, specs, tag);
      const expected = model.apply(batch, now);
      for (const o of expected) {
        if (o.borrowed) seen.borrowed++;
        if (o.ban === 'active') seen.banned++;
        if (o.ban === 'started') seen.started++;
        if (!o.allowed) seen.rejected++;
        if (o.needsAggregate) seen.asked++;
      }
      const answers = await Promise.all(stores.map(([, s]) => s.apply(batch, now)));
      answers.forEach((got, i) => expect(got, `${stores[i]![0]} trace ${trace} step ${step} at ${now}: ${JSON.stringify(batch)}`).toEqual(expected));
    }
    await stores[0]![1].close();
    // the traces reach every branch
    expect(seen.borrowed).toBeGreaterThan(10);
    expect(seen.banned).toBeGreaterThan(10);
    expect(seen.started).toBeGreaterThan(10);
    expect(seen.asked).toBeGreaterThan(3);
    expect(seen.rejected).toBeGreaterThan(STEPS / 10);
  });
});
