/**
 * Calendar quotas and the max_values guard, through the engine (rules compiled from YAML, RateLimiter, a real
 * store) with a fake clock: the same suite runs on memory, Redis and Redis Cluster. Windows are checked on the
 * days where they are hardest (DST changes in Europe/Berlin and America/New_York, February of a leap year, the
 * Monday an ISO week starts), and the time to the next boundary is read from what the client gets (the status's
 * reset and `retry-after`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import type { CounterStore } from '../../../src/storage/counter-store.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import type { RateLimitDecision } from '../../../src/vocab/types.js';

export interface RulesTimeStore {
  readonly store: CounterStore;
  /** Keys under `prefix` in the store (Redis: SCAN on every master), or undefined where the store cannot list them. */
  readonly keys?: (prefix: string) => Promise<string[]>;
  /** PTTL of a key, ms (Redis only). */
  readonly pttl?: (key: string) => Promise<number>;
  readonly stop?: () => Promise<void>;
}

const RULES = `domain: time
descriptors:
  - key: berlin_month
    rate_limit: {calendar: month, time_zone: Europe/Berlin, requests_per_unit: 3}
  - key: ny_day
    rate_limit: {calendar: day, time_zone: America/New_York, requests_per_unit: 2}
  - key: berlin_day
    rate_limit: {calendar: day, time_zone: Europe/Berlin, requests_per_unit: 1}
  - key: utc_week
    rate_limit: {calendar: week, requests_per_unit: 1}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5, max_values: 2}
  - key: strict_user
    rate_limit: {unit: minute, requests_per_unit: 5, max_values: 2, on_max_values: reject}
`;

let run = 0;

export function describeRulesTime(name: string, makeStore: () => Promise<RulesTimeStore>): void {
  describe(`calendar quotas and max_values: ${name}`, () => {
    let handle: RulesTimeStore;
    beforeAll(async () => {
      handle = await makeStore();
    });
    afterAll(async () => {
      await handle?.store.close();
      await handle?.stop?.();
    });

    function limiter(at: string): { limiter: RateLimiter; clock: FakeClock; prefix: string } {
      const compiled = compileConfigFiles([{ name: 'time.yaml', text: RULES }], { mergeDomains: false });
      if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
      const clock = new FakeClock(Date.parse(at));
      const prefix = `rt:${process.pid}:${++run}:`;
      const config = compiled.config;
      return {
        clock,
        prefix,
        limiter: new RateLimiter({
          store: handle.store,
          clock,
          config: () => config,
          keyPrefix: prefix,
          headers: { mode: 'none', xRateLimit: false },
          nearLimitRatio: 0.8,
        }),
      };
    }
    const ask = (l: RateLimiter, key: string, value = 'a'): Promise<RateLimitDecision> =>
      l.decide({ domain: 'time', descriptors: [{ entries: [{ key, value }] }], hitsAddend: 1 });
    const retryAfter = (d: RateLimitDecision): string | undefined => d.responseHeadersToAdd.find((h) => h.key === 'retry-after')?.value;

    it('a month in Europe/Berlin ends at local midnight of the 1st, after 29 February in a leap year', async () => {
      const { limiter: l, clock } = limiter('2024-02-29T22:30:00Z'); // 23:30 in Berlin (CET, +1)
      for (let i = 0; i < 3; i++) expect((await ask(l, 'berlin_month')).overallCode).toBe('OK');
      const over = await ask(l, 'berlin_month');
      expect(over.overallCode).toBe('OVER_LIMIT');
      expect(over.statuses[0]).toMatchObject({ durationUntilResetMs: 30 * 60_000, currentLimit: { unit: 'month', requestsPerUnit: 3 } });
      expect(retryAfter(over)).toBe('1800');
      clock.set(Date.parse('2024-02-29T22:59:59.999Z'));
      expect((await ask(l, 'berlin_month')).overallCode).toBe('OVER_LIMIT');
      clock.set(Date.parse('2024-02-29T23:00:00Z')); // 1 March, 00:00 in Berlin
      const next = await ask(l, 'berlin_month');
      expect(next.overallCode).toBe('OK');
      // March has 31 days, its last 31 hours... the window ends at 1 April 00:00 CEST (+2): 31 days less 1 hour.
      expect(next.statuses[0]!.durationUntilResetMs).toBe(31 * 86_400_000 - 3_600_000);
    });

    it('a day in America/New_York is 23 hours long when DST starts, and 25 when it ends', async () => {
      const { limiter: l, clock } = limiter('2025-03-09T05:00:00Z'); // 9 March 00:00 EST
      for (let i = 0; i < 2; i++) expect((await ask(l, 'ny_day')).overallCode).toBe('OK');
      const over = await ask(l, 'ny_day');
      expect(over.statuses[0]!.durationUntilResetMs).toBe(23 * 3_600_000);
      clock.set(Date.parse('2025-03-10T03:59:59Z'));
      expect((await ask(l, 'ny_day')).overallCode).toBe('OVER_LIMIT');
      clock.set(Date.parse('2025-03-10T04:00:00Z')); // 10 March 00:00 EDT
      expect((await ask(l, 'ny_day')).overallCode).toBe('OK');

      clock.set(Date.parse('2025-11-02T04:00:00Z')); // 2 November 00:00 EDT
      const fallDay = await ask(l, 'ny_day');
      expect(fallDay.statuses[0]!.durationUntilResetMs).toBe(25 * 3_600_000);
    });

    it('a day in Europe/Berlin: 23 hours on 30 March 2025, 25 hours on 26 October 2025', async () => {
      const { limiter: l, clock } = limiter('2025-03-29T23:00:00Z');
      expect((await ask(l, 'berlin_day')).statuses[0]!.durationUntilResetMs).toBe(23 * 3_600_000);
      clock.set(Date.parse('2025-10-26T11:00:00Z')); // 13:00 CET, after the change at 03:00 CEST
      expect((await ask(l, 'berlin_day')).overallCode).toBe('OK');
      const over = await ask(l, 'berlin_day');
      expect(over.overallCode).toBe('OVER_LIMIT');
      expect(retryAfter(over)).toBe(String(12 * 3600)); // until 27 October 00:00 CET = 23:00Z
    });

    it('a week starts on Monday (ISO 8601), in UTC when no zone is given', async () => {
      const { limiter: l, clock } = limiter('2025-03-30T23:59:00Z'); // Sunday
      expect((await ask(l, 'utc_week')).overallCode).toBe('OK');
      expect((await ask(l, 'utc_week')).statuses[0]!.durationUntilResetMs).toBe(60_000);
      clock.set(Date.parse('2025-03-31T00:00:00Z')); // Monday
      const monday = await ask(l, 'utc_week');
      expect(monday.overallCode).toBe('OK');
      expect(monday.statuses[0]!.durationUntilResetMs).toBe(7 * 86_400_000);
    });

    it('keeps the counter of a calendar window until its end, under a key naming the window start', async () => {
      if (handle.keys === undefined || handle.pttl === undefined) return;
      const { limiter: l, prefix } = limiter('2024-02-29T22:30:00Z');
      await ask(l, 'berlin_month');
      const keys = await handle.keys(prefix);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatch(/:calendar:month:Europe\/Berlin:1706742000000$/); // 1 Feb 00:00 CET
      const ttl = await handle.pttl(keys[0]!);
      expect(ttl).toBeGreaterThan(30 * 60_000 - 5_000);
      expect(ttl).toBeLessThanOrEqual(30 * 60_000);
    });

    it('a refund (is_negative_hits) gives units back to the calendar window it came from, never below 0', async () => {
      const { limiter: l, clock, prefix } = limiter('2025-05-31T20:00:00Z'); // 22:00 on 31 May in Berlin
      const refund = (hits: number) =>
        l.decide({ domain: 'time', descriptors: [{ entries: [{ key: 'berlin_month', value: 'r' }], hitsAddend: hits, negativeHits: true }], hitsAddend: 1 });
      for (let i = 0; i < 3; i++) expect((await ask(l, 'berlin_month', 'r')).overallCode).toBe('OK');
      expect((await ask(l, 'berlin_month', 'r')).overallCode).toBe('OVER_LIMIT');
      expect((await refund(2)).overallCode).toBe('OK');
      expect((await ask(l, 'berlin_month', 'r')).statuses[0]!.limitRemaining).toBe(1); // 3 - 2 + 1 counted
      expect((await refund(10)).overallCode).toBe('OK'); // 2 counted: back to 0, not below
      for (let i = 0; i < 3; i++) expect((await ask(l, 'berlin_month', 'r')).overallCode).toBe('OK');
      expect((await ask(l, 'berlin_month', 'r')).overallCode).toBe('OVER_LIMIT');
      // A refund in the next month goes to June's window, not May's.
      clock.set(Date.parse('2025-05-31T22:00:00Z'));
      expect((await refund(3)).overallCode).toBe('OK');
      expect((await ask(l, 'berlin_month', 'r')).statuses[0]!.limitRemaining).toBe(2);
      if (handle.pttl !== undefined && handle.keys !== undefined) {
        const keys = await handle.keys(prefix);
        for (const key of keys) expect(await handle.pttl(key)).toBeGreaterThan(0);
      }
    });

    it('max_values overflow: past 2 values in a window, new values share one counter under the same limit', async () => {
      const { limiter: l, clock, prefix } = limiter('2025-01-01T00:00:01Z');
      expect((await ask(l, 'user', 'a')).overallCode).toBe('OK');
      expect((await ask(l, 'user', 'b')).overallCode).toBe('OK');
      // c, d, e and f share the overflow counter: 5 hits between them
      for (const v of ['c', 'd', 'e', 'c', 'f']) expect((await ask(l, 'user', v)).overallCode).toBe('OK');
      expect((await ask(l, 'user', 'g')).overallCode).toBe('OVER_LIMIT');
      expect((await ask(l, 'user', 'c')).overallCode).toBe('OVER_LIMIT');
      // the tracked values keep their own counters
      for (let i = 0; i < 4; i++) expect((await ask(l, 'user', 'a')).overallCode).toBe('OK');
      expect((await ask(l, 'user', 'a')).overallCode).toBe('OVER_LIMIT');
      expect(l.valueGuardStates()).toEqual([expect.objectContaining({ domain: 'time', rule: 'time.user', maxValues: 2, tracked: 2, pastBound: 7 })]);
      if (handle.keys !== undefined) expect(await handle.keys(prefix)).toHaveLength(3);
      clock.advance(60_000); // a new window: the first two values seen get their own counters
      expect((await ask(l, 'user', 'c')).statuses[0]!.limitRemaining).toBe(4);
    });

    it('max_values and refunds: a refund takes no slot and is not past the bound; past it, it goes to the overflow counter', async () => {
      const { limiter: l } = limiter('2025-01-01T00:00:01Z');
      const refund = (value: string) =>
        l.decide({ domain: 'time', descriptors: [{ entries: [{ key: 'user', value }], hitsAddend: 1, negativeHits: true }], hitsAddend: 1 });
      expect((await refund('x')).overallCode).toBe('OK');
      for (const v of ['a', 'b']) expect((await ask(l, 'user', v)).statuses[0]!.limitRemaining).toBe(4);
      for (const v of ['c', 'd']) await ask(l, 'user', v); // the overflow counter: 2
      expect((await refund('e')).overallCode).toBe('OK'); // back to 1
      expect((await ask(l, 'user', 'f')).statuses[0]!.limitRemaining).toBe(3);
      expect(l.valueGuardStates()).toEqual([expect.objectContaining({ rule: 'time.user', tracked: 2, pastBound: 3 })]);
    });

    it('max_values reject: past 2 values, new values are rejected and nothing is stored for them', async () => {
      const { limiter: l, prefix } = limiter('2025-01-01T00:00:01Z');
      expect((await ask(l, 'strict_user', 'a')).overallCode).toBe('OK');
      expect((await ask(l, 'strict_user', 'b')).overallCode).toBe('OK');
      const third = await ask(l, 'strict_user', 'c');
      expect(third.overallCode).toBe('OVER_LIMIT');
      expect(third.statuses[0]!.durationUntilResetMs).toBe(59_000);
      expect((await ask(l, 'strict_user', 'a')).overallCode).toBe('OK');
      if (handle.keys !== undefined) expect(await handle.keys(prefix)).toHaveLength(2);
    });

    it('the bound is held per process: two replicas on one store keep at most 2 × max_values counters and one overflow', async () => {
      const first = limiter('2025-01-01T00:00:01Z');
      const config = (first.limiter as unknown as { options: ConstructorParameters<typeof RateLimiter>[0] }).options;
      const second = new RateLimiter({ ...config });
      for (let i = 0; i < 50; i++) {
        await ask(first.limiter, 'user', `v${i}`);
        await ask(second, 'user', `w${i}`);
      }
      if (handle.keys !== undefined) expect(await handle.keys(first.prefix)).toHaveLength(2 * 2 + 1);
      expect(first.limiter.valueGuardStates()[0]).toMatchObject({ tracked: 2, pastBound: 48 });
    });
  });
}
