/**
 * Fair shares against streams that game them, in memory and across two replicas on a real redis-server, on an
 * injected clock ({name: all} at 20/s, tenants at 5/s; honest Envoys report every 5 s, at 30/s):
 * - streams that report once and stay quiet hold no share the measured Envoys need, and expire;
 * - a bucket table filled by such streams still answers a well-behaved Envoy's new tenant with tokens (never
 *   DENY_ALL), and tracks it once they expired;
 * - eight measured streams from one address hold one fair part together;
 * - an address opening a stream three times a second (each measured, then closed) takes at most a client's
 *   part and the newcomers' part from two honest Envoys, and its closed streams count once at most.
 */
import { describe, expect } from 'vitest';
import { it } from '../../support/fixtures.js';
import type { RedisServer } from '../../support/redis.js';
import { ALL, quotaReplicas, tenant, tokensOf, type QuotaStreamSim, type Replicas } from '../../support/quota-replicas.js';

/** Honest Envoys: each reports its buckets with 5 s of requests at 30/s; then two sync rounds (two seconds). */
async function honestRound(r: Replicas, honest: readonly QuotaStreamSim[], buckets = [ALL]): Promise<void> {
  for (const h of honest)
    await r.report(
      h,
      buckets.map((entries) => ({ entries, allowed: 150 })),
    );
  await r.sync();
  await r.sync();
}

describe.each(['memory', 'redis'] as const)('fair shares (%s)', (mode) => {
  const setUp = (redis: RedisServer, bounds?: { maxBuckets?: number; maxBucketsPerStream?: number }) => quotaReplicas(mode, redis.port, bounds);
  /** The replica of the "other" streams: the second one on Redis. */
  const other = mode === 'redis' ? 1 : 0;

  it('25 streams that report once and stay quiet leave a measured Envoy half the limit at once, and all of it once they expired', async ({ redis }) => {
    const r = await setUp(redis);
    try {
      const honest = r.open(0, 'honest');
      await r.report(honest, [{ entries: ALL, allowed: 1 }]);
      const quiet = Array.from({ length: 25 }, (_, i) => r.open(other, `quiet${i}`));
      r.advance(100);
      for (const q of quiet) await r.report(q, [{ entries: ALL, allowed: 1 }]);
      await r.sync();
      const seen: (number | string | undefined)[] = [];
      for (let t = 0; t < 4; t++) {
        r.advance(5000);
        await honestRound(r, [honest]);
        seen.push(tokensOf(honest));
      }
      // Measured at 30/s: at least half of 20 while they were counted, and never DENY_ALL.
      for (const n of seen.slice(0, 2)) expect(n, JSON.stringify(seen)).toBeGreaterThanOrEqual(10);
      // 15 s of silence: they no longer count.
      expect(seen[3]).toBe(20);
      expect(await r.stored(ALL)).toEqual(mode === 'redis' ? ['replica0|honest@10.0.0.1:5000'] : []);
    } finally {
      r.stop();
    }
  });

  it('a bucket table filled by quiet streams answers a new tenant of a well-behaved Envoy with tokens, and tracks it once they expired', async ({ redis }) => {
    const r = await setUp(redis, { maxBuckets: 20, maxBucketsPerStream: 5 });
    try {
      const envoy = r.open(0, 'envoy');
      await r.report(envoy, [{ entries: ALL, allowed: 1 }]);
      // Ten streams of 5 tenants each fill the table (20 buckets) and say nothing more.
      for (let i = 0; i < 10; i++)
        await r.report(
          r.open(0, `filler${i}`),
          Array.from({ length: 5 }, (_, k) => ({ entries: tenant(`t${i}-${k}`), allowed: 1 })),
        );
      r.advance(1000);
      await r.report(envoy, [
        { entries: ALL, allowed: 20 },
        { entries: tenant('new'), allowed: 1 },
      ]);
      const first = tokensOf(envoy, tenant('new'));
      expect(first, 'tokens the new tenant was told').toBeGreaterThanOrEqual(1);
      for (let t = 0; t < 4; t++) {
        r.advance(5000);
        await honestRound(r, [envoy], [ALL, tenant('new')]);
      }
      // The fillers went quiet 20 s ago: the tenant is tracked, with its whole limit.
      expect(tokensOf(envoy, tenant('new'))).toBe(5);
      expect((r.books[0]!.describe() as { tracked: number }).tracked).toBe(2);
    } finally {
      r.stop();
    }
  });

  it('eight streams from one address, each on its own connection and with a measured demand, hold one fair part together', async ({ redis }) => {
    const r = await setUp(redis);
    try {
      const honest = r.open(0, 'honest');
      const greedy = Array.from({ length: 8 }, (_, i) => r.open(other, `greedy${i}`, `10.9.9.9:${4000 + i}`));
      const everyone = [honest, ...greedy];
      for (const s of everyone) await r.report(s, [{ entries: ALL, allowed: 1 }]);
      await r.sync();
      for (let t = 0; t < 3; t++) {
        r.advance(5000);
        await honestRound(r, everyone);
      }
      const greedyTotal = greedy.reduce((n, g) => n + Number(tokensOf(g)), 0);
      expect(tokensOf(honest), `greedy streams hold ${greedyTotal}`).toBe(10);
      expect(greedyTotal).toBeLessThanOrEqual(10);
    } finally {
      r.stop();
    }
  });

  it('an address opening a stream three times a second, each measured then closed, leaves two honest Envoys their parts; its closed streams count once', async ({
    redis,
  }) => {
    const r = await setUp(redis);
    try {
      const honest = [r.open(0, 'h0'), r.open(other, 'h1')];
      for (const h of honest) await r.report(h, [{ entries: ALL, allowed: 1 }]);
      await r.sync();
      // Both measured at 30/s: 10 each.
      r.advance(5000);
      await honestRound(r, honest);
      r.advance(5000);
      await honestRound(r, honest);
      expect(honest.map((h) => tokensOf(h))).toEqual([10, 10]);
      const low = [20, 20];
      const seen: number[] = [];
      let n = 0;
      // 25 s of churn from one address: a stream every 334 ms, on either replica, reporting at once and a
      // second later (so its demand is measured), and closed 1.3 s after it opened (four open at a time).
      const open: { s: QuotaStreamSim; age: number }[] = [];
      for (let ms = 0; ms < 25_000; ms += 334) {
        const c = r.open(n % 2 === 0 ? 0 : other, `churn${n}`, `10.9.9.9:${6000 + n++}`);
        await r.report(c, [{ entries: ALL, allowed: 1 }]);
        open.push({ s: c, age: 0 });
        for (const o of open) {
          if (o.age === 1002) await r.report(o.s, [{ entries: ALL, allowed: 30 }]);
          o.age += 334;
        }
        if (open[0]!.age > 1336) {
          await r.close(open.shift()!.s);
          const stored = await r.stored(ALL);
          expect(
            stored.filter((f) => f.includes('ended@')).length,
            `closed streams count once per address and replica: ${stored.join(' ')}`,
          ).toBeLessThanOrEqual(2);
        }
        r.advance(334);
        if (ms % 1002 < 334) await r.sync();
        if (ms % 5010 < 334) await honestRound(r, honest);
        honest.forEach((h, i) => (low[i] = Math.min(low[i]!, Number(tokensOf(h)))));
        seen.push(...honest.map((h) => Number(tokensOf(h))));
      }
      for (const o of open) await r.close(o.s);
      r.advance(6000); // the last closed streams' grace
      // The churning address got one fair part as a client, and the newcomers' part: two of four at most
      // (5 each for the honest Envoys; 4 for a moment while the replicas settle).
      expect(
        low.every((x) => x >= 4),
        `lowest shares ${JSON.stringify(low)}`,
      ).toBe(true);
      expect(seen.filter((x) => x >= 5).length / seen.length).toBeGreaterThanOrEqual(0.9);
      r.advance(5000);
      await honestRound(r, honest);
      await honestRound(r, honest);
      expect(honest.map((h) => tokensOf(h))).toEqual([10, 10]);
    } finally {
      r.stop();
    }
  });
});
