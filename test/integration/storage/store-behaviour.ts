/**
 * The one behaviour suite every CounterStore passes unchanged (memory, Redis single, Sentinel, Cluster):
 * the batch contract of src/storage/counter-store.ts for every algorithm of the registry. Time comes from a
 * FakeClock passed as `nowMs`; expiry is checked by moving it (the algorithms' state carries its own times,
 * so no real TTL has to run out).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { CounterStore, LimitCheck } from '../../../src/storage/counter-store.js';

export interface StoreHandle {
  readonly store: CounterStore;
  /** Stop whatever the store needed (servers); the suite closes the store itself. */
  readonly stop?: () => Promise<void>;
}

const WINDOW = 60_000;
/** An instant 1 s into a minute (and into an hour), so fixed windows do not roll over mid-test. */
const T0 = 1_700_002_800_000 + 1_000;

let serial = 0;
/** A fresh descriptor key per test and store, so tests share one server without seeing each other. */
function freshKey(algorithm: AlgorithmName, name: string, windowMs = WINDOW): string {
  serial++;
  const run = `${process.pid}-${Date.now()}-${serial}`;
  return counterKey('rl:test:', 'suite', [{ key: name, value: run }], algorithm, windowMs);
}

/** A check with burst = limit, so every algorithm admits `limit` single hits at one instant. */
function check(algorithm: AlgorithmName, key: string, limit: number, hits = 1, enforce = true): LimitCheck {
  return { key, algorithm, limit, windowMs: WINDOW, burst: Math.max(1, limit), hits, enforce };
}

/** `algorithms`: the ones the store runs (memcached: fixed_window only); default every algorithm. */
export function describeCounterStore(name: string, makeStore: () => Promise<StoreHandle>, algorithms: readonly AlgorithmName[] = ALGORITHM_NAMES): void {
  describe(`CounterStore behaviour: ${name}`, () => {
    let handle: StoreHandle;
    let store: CounterStore;
    beforeAll(async () => {
      handle = await makeStore();
      store = handle.store;
    });
    afterAll(async () => {
      await store?.close();
      await handle?.stop?.();
    });

    it('is ready and answers an empty batch with no outcomes', async () => {
      expect(store.isReady()).toBe(true);
      expect(await store.apply([], T0)).toEqual([]);
    });

    describe.each(algorithms)('%s', (algorithm) => {
      it('admits exactly the limit, counting remaining down, then rejects without consuming', async () => {
        const clock = new FakeClock(T0);
        const key = freshKey(algorithm, 'count');
        for (let i = 1; i <= 5; i++) {
          const [o] = await store.apply([check(algorithm, key, 5)], clock.nowMs());
          expect(o).toMatchObject({ allowed: true, remaining: 5 - i });
          expect(o!.resetMs).toBeGreaterThan(0);
          expect(o!.resetMs).toBeLessThanOrEqual(2 * WINDOW);
        }
        for (let i = 0; i < 3; i++) {
          const [o] = await store.apply([check(algorithm, key, 5)], clock.nowMs());
          expect(o).toMatchObject({ allowed: false, remaining: 0 });
          expect(o!.resetMs).toBeGreaterThan(0);
          expect(o!.resetMs).toBeLessThanOrEqual(WINDOW);
        }
      });

      it('counts several hits at once and rejects more hits than are left', async () => {
        const key = freshKey(algorithm, 'multi');
        expect((await store.apply([check(algorithm, key, 5, 3)], T0))[0]).toMatchObject({ allowed: true, remaining: 2 });
        expect((await store.apply([check(algorithm, key, 5, 3)], T0))[0]).toMatchObject({ allowed: false, remaining: 2 });
        expect((await store.apply([check(algorithm, key, 5, 2)], T0))[0]).toMatchObject({ allowed: true, remaining: 0 });
      });

      it('a check with hits = 0 reports without counting', async () => {
        const key = freshKey(algorithm, 'zero');
        expect((await store.apply([check(algorithm, key, 4, 0)], T0))[0]).toMatchObject({ allowed: true, remaining: 4 });
        await store.apply([check(algorithm, key, 4, 1)], T0);
        for (let i = 0; i < 3; i++) {
          expect((await store.apply([check(algorithm, key, 4, 0)], T0))[0]).toMatchObject({ allowed: true, remaining: 3 });
        }
      });

      it('a rejected batch consumes nothing from any of its limits', async () => {
        const open = freshKey(algorithm, 'open');
        const full = freshKey(algorithm, 'full');
        const sameTag = open.replace(`:${algorithm}:`, `:${algorithm}:x`); // another limit of the same descriptor
        await store.apply([check(algorithm, full, 1)], T0);
        const outcomes = await store.apply([check(algorithm, open, 10), check(algorithm, sameTag, 10, 2), check(algorithm, full, 1)], T0);
        expect(outcomes.map((o) => o.allowed)).toEqual([true, true, false]);
        // allowed but not committed: remaining is the state as it was
        expect(outcomes.map((o) => o.remaining)).toEqual([10, 10, 0]);
        const after = await store.apply([check(algorithm, open, 10, 0), check(algorithm, sameTag, 10, 0)], T0);
        expect(after.map((o) => o.remaining)).toEqual([10, 10]);
      });

      it('a shadow-mode check does not veto the batch and is not counted when over', async () => {
        const counted = freshKey(algorithm, 'counted');
        const shadow = freshKey(algorithm, 'shadow');
        await store.apply([check(algorithm, shadow, 1)], T0);
        const outcomes = await store.apply([check(algorithm, counted, 10), check(algorithm, shadow, 1, 1, false)], T0);
        expect(outcomes[0]).toMatchObject({ allowed: true, remaining: 9 });
        expect(outcomes[1]).toMatchObject({ allowed: false, remaining: 0 });
        // an allowed shadow check of an admitted batch is counted like any other
        const shadow2 = freshKey(algorithm, 'shadow2');
        const [o] = await store.apply([check(algorithm, shadow2, 3, 1, false)], T0);
        expect(o).toMatchObject({ allowed: true, remaining: 2 });
      });

      const counting = algorithm === 'fixed_window' || algorithm === 'sliding_window_counter';

      it.runIf(counting)('countOver admitted (shadow mode): counted past the limit when the batch is admitted, not when it is rejected', async () => {
        const key = freshKey(algorithm, 'shadow-counted');
        const shadow = (hits = 1): LimitCheck => ({ ...check(algorithm, key, 2, hits, false), countOver: 'admitted' });
        const answers = [];
        for (let i = 0; i < 5; i++) answers.push((await store.apply([shadow()], T0))[0]!.allowed);
        expect(answers).toEqual([true, true, false, false, false]);
        const rejected = await store.apply([check(algorithm, freshKey(algorithm, 'veto'), 0), shadow(3)], T0);
        expect(rejected.map((o) => o.allowed)).toEqual([false, false]);
        // the count (read under a higher limit of the same key) holds the 5 hits of the admitted requests only
        expect((await store.apply([check(algorithm, key, 10, 0)], T0))[0]).toMatchObject({ remaining: 5 });
      });

      it.runIf(counting)('countOver always (count_every_hit): counted past the limit and on a rejected batch; hits 0 stays a pure check', async () => {
        const key = freshKey(algorithm, 'always');
        const always = (hits: number): LimitCheck => ({ ...check(algorithm, key, 5, hits), countOver: 'always' });
        expect((await store.apply([always(4)], T0))[0]).toMatchObject({ allowed: true, remaining: 1 });
        expect((await store.apply([always(3)], T0))[0]).toMatchObject({ allowed: false });
        const veto = check(algorithm, freshKey(algorithm, 'veto2'), 0);
        expect((await store.apply([veto, always(2), always(1)], T0)).map((o) => o.allowed)).toEqual([false, false, false]);
        for (let i = 0; i < 3; i++) expect((await store.apply([always(0)], T0))[0]).toMatchObject({ allowed: false, remaining: 0 });
        // 4 + 3 + 2 + 1 = 10 counted
        expect((await store.apply([check(algorithm, key, 20, 0)], T0))[0]).toMatchObject({ remaining: 10 });
      });

      it('starts afresh once the window has passed (state expiry by time)', async () => {
        const clock = new FakeClock(T0);
        const key = freshKey(algorithm, 'expiry');
        for (let i = 0; i < 3; i++) await store.apply([check(algorithm, key, 3)], clock.nowMs());
        expect((await store.apply([check(algorithm, key, 3)], clock.nowMs()))[0]!.allowed).toBe(false);
        clock.advance(2 * WINDOW);
        expect((await store.apply([check(algorithm, key, 3)], clock.nowMs()))[0]).toMatchObject({
          allowed: true,
          remaining: 2,
        });
      });

      it('changing the limit keeps the count; changing the algorithm or window starts afresh', async () => {
        const entries = [{ key: 'reload', value: `${process.pid}-${Date.now()}-${++serial}` }];
        const key = counterKey('rl:test:', 'suite', entries, algorithm, WINDOW);
        for (let i = 0; i < 3; i++) await store.apply([check(algorithm, key, 5)], T0);
        // A reload raising the limit to 10: same key, so the 3 hits still count: window algorithms have
        // 10 - 3 - 1 left. Buckets keep their level (their state is time-based, so the new rate reinterprets
        // it): whatever they answer, it is not what a fresh key answers.
        const raised = { ...check(algorithm, key, 10), burst: 5 };
        const [kept] = await store.apply([raised], T0);
        if (algorithm === 'token_bucket' || algorithm === 'leaky_bucket') {
          const [fresh] = await store.apply([{ ...raised, key: freshKey(algorithm, 'fresh') }], T0);
          expect(kept).not.toEqual(fresh);
        } else {
          expect(kept).toMatchObject({ allowed: true, remaining: 6 });
        }
        const other = algorithms.find((a) => a !== algorithm);
        if (other !== undefined) {
          const otherKey = counterKey('rl:test:', 'suite', entries, other, WINDOW);
          expect((await store.apply([check(other, otherKey, 5)], T0))[0]).toMatchObject({ allowed: true, remaining: 4 });
        }
        const longer = counterKey('rl:test:', 'suite', entries, algorithm, 2 * WINDOW);
        const [o] = await store.apply([{ ...check(algorithm, longer, 5), windowMs: 2 * WINDOW }], T0);
        expect(o).toMatchObject({ allowed: true, remaining: 4 });
      });

      it('checks repeating one key count one after the other, and a rejection undoes the earlier ones', async () => {
        const key = freshKey(algorithm, 'repeat');
        const two = await store.apply([check(algorithm, key, 3), check(algorithm, key, 3)], T0);
        expect(two.map((o) => [o.allowed, o.remaining])).toEqual([
          [true, 2],
          [true, 1],
        ]);
        // one left: the first takes it, the second is rejected, so the batch is rejected and nothing is counted
        const over = await store.apply([check(algorithm, key, 3), check(algorithm, key, 3)], T0);
        expect(over.map((o) => o.allowed)).toEqual([true, false]);
        expect((await store.apply([check(algorithm, key, 3, 0)], T0))[0]).toMatchObject({ remaining: 1 });
      });

      it('keeps many keys apart, in one batch and across calls', async () => {
        const keys = Array.from({ length: 40 }, (_, i) => freshKey(algorithm, `many${i}`));
        const first = await store.apply(
          keys.map((k, i) => check(algorithm, k, 2 + (i % 5))),
          T0,
        );
        expect(first.map((o) => o.remaining)).toEqual(keys.map((_, i) => 1 + (i % 5)));
        await Promise.all(keys.map((k, i) => store.apply([check(algorithm, k, 2 + (i % 5))], T0)));
        const again = await store.apply(
          keys.map((k, i) => check(algorithm, k, 2 + (i % 5), 0)),
          T0,
        );
        expect(again.map((o) => o.remaining)).toEqual(keys.map((_, i) => i % 5));
      });
    });

    it('a limit of 0 rejects every hit but admits a check with hits = 0', async () => {
      for (const algorithm of algorithms) {
        const key = freshKey(algorithm, 'zero-limit');
        expect((await store.apply([check(algorithm, key, 0)], T0))[0]).toMatchObject({ allowed: false, remaining: 0 });
        expect((await store.apply([check(algorithm, key, 0, 0)], T0))[0]).toMatchObject({ allowed: true, remaining: 0 });
      }
    });

    it('decides a batch mixing every algorithm', async () => {
      const checks = algorithms.map((a) => check(a, freshKey(a, 'mixed'), 2));
      expect((await store.apply(checks, T0)).map((o) => o.remaining)).toEqual(checks.map(() => 1));
      expect((await store.apply(checks, T0)).map((o) => o.remaining)).toEqual(checks.map(() => 0));
      const third = await store.apply(checks, T0);
      expect(third.map((o) => o.allowed)).toEqual(checks.map(() => false));
    });
  });
}
