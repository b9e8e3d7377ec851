/**
 * RLQS with BACKEND=redis: two service replicas on one redis-server (started here), quota streams over real
 * sockets (messages built with Envoy's own rlqs.proto). A bucket's limit is global across the replicas: an
 * Envoy joining on the second replica gets only what the first replica's Envoy does not hold, the first is
 * pushed a smaller share within about a second (not at its next report) and the second grows into what it gave
 * up, so the shares never add up past the limit.
 * With Redis gone, reports are still answered at once from the last view (never an error). On Redis Cluster too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QuotaStream, type Action } from '../support/rlqs.js';
import { startCluster, startRedis, type ClusterSetup, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = `
domain: quota
descriptors:
  - key: name
    value: all
    rate_limit: {unit: second, requests_per_unit: 20}
  - key: name
    value: skew
    rate_limit: {unit: second, requests_per_unit: 20}
`;

/** The token bucket's tokens per fill, 0 for DENY_ALL. */
const share = (actions: Action[]): number => {
  const s = actions[0]!.quota_assignment_action!.rate_limit_strategy!;
  if (s.blanket_rule === 'DENY_ALL') return 0;
  return Number(s.token_bucket!.tokens_per_fill!.value);
};

describe('RLQS across two replicas on one Redis', () => {
  let redis: RedisServer;
  const replicas: TestService[] = [];
  const streams: QuotaStream[] = [];
  const open = (replica: TestService) => {
    const s = new QuotaStream(replica.grpcAddress);
    streams.push(s);
    return s;
  };

  beforeAll(async () => {
    redis = await startRedis();
    for (let i = 0; i < 2; i++) replicas.push(await startTestService({ 'quota.yaml': RULES }, { backend: 'redis', redisUrl: redis.url }));
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    for (const r of replicas) await r.close();
    await redis?.stop();
  });

  it("an Envoy on the second replica shrinks the first replica's Envoy's share; the sum stays within the limit", async () => {
    const a = open(replicas[0]!);
    a.send('quota', [{ bucket: { name: 'all' }, allowed: 1 }]);
    expect(share(await a.response(1))).toBe(20);

    // B joins on the other replica: A holds the whole limit, so B gets what is free (nothing) at once.
    const b = open(replicas[1]!);
    b.send('quota', [{ bucket: { name: 'all' }, allowed: 1 }]);
    expect(share(await b.response(1))).toBe(0);

    // Without waiting for A's next report (Envoy's come every 5 s): B's replica asks the others to look again,
    // A's replica sees B (demand not measured yet, so it wants an even part) and pushes A its smaller share,
    // and then B's replica pushes B what A gave up.
    const t0 = performance.now();
    expect(share(await a.response(2))).toBe(10);
    expect(share(await b.response(2))).toBe(10);
    const settledMs = performance.now() - t0;
    expect(settledMs).toBeLessThan(3500);
    // Reports of busy Envoys (30 requests since the last, at most a few seconds ago) keep the split.
    a.send('quota', [{ bucket: { name: 'all' }, allowed: 30 }]);
    expect(share(await a.response(3))).toBe(10);
    b.send('quota', [{ bucket: { name: 'all' }, allowed: 30 }]);
    expect(share(await b.response(3))).toBe(10);

    // The debug view shows the other replica's Envoys as read at the last report (B's, here).
    const view = (await (await fetch(`${replicas[1]!.httpBase}/rlqs`)).json()) as {
      buckets: { holders: { share: number }[]; other_replicas: { share: number }[] }[];
    };
    expect(view.buckets[0]!.holders.map((h) => h.share)).toEqual([10]);
    expect(view.buckets[0]!.other_replicas.map((h) => h.share)).toEqual([10]);

    // B's stream ends: its Envoy goes on enforcing its last share until it is assigned again after reconnecting,
    // so the entry of its measured demand still counts for a while (6 s) and A does not grow into it.
    await new Promise((r) => setTimeout(r, 1100)); // demand is measured over at least a second
    b.send('quota', [{ bucket: { name: 'all' }, allowed: 30 }]);
    expect(share(await b.response(4))).toBe(10);
    b.close();
    await new Promise((r) => setTimeout(r, 200));
    a.send('quota', [{ bucket: { name: 'all' }, allowed: 3 }]);
    expect(share(await a.response(4))).toBeLessThanOrEqual(10);
    a.close();
  });

  it('follows demand across replicas: a light Envoy on one shrinks, a busy one on the other grows into it, within the limit', async () => {
    const bucket = { name: 'skew' }; // the first test's streams still count on {name: all} for a while
    const a = open(replicas[0]!);
    const b = open(replicas[1]!);
    a.send('quota', [{ bucket }]);
    await a.response(1);
    b.send('quota', [{ bucket }]);
    await b.response(1);
    // Both settle at 10 and 10 (pushed, see above) before demand is measured.
    await a.response(2);
    await b.response(2);
    await new Promise((r) => setTimeout(r, 1100)); // demand is measured over at least a second
    b.send('quota', [{ bucket, allowed: 4 }]);
    const light = share(await b.response(3));
    a.send('quota', [{ bucket, allowed: 33 }]);
    const busy = share(await a.response(3));
    // Demand is measured on the service's clock (4 and 33 over a bit more than a second): about 3 and 20/s.
    expect(light).toBeLessThanOrEqual(6);
    expect(busy).toBeGreaterThanOrEqual(14);
    expect(busy + light).toBeLessThanOrEqual(20);
    a.close();
    b.close();
  });

  it('answers from the last view while Redis is gone, within the read timeout, never with an error', async () => {
    const a = open(replicas[0]!);
    const b = open(replicas[1]!);
    a.send('quota', [{ bucket: { name: 'all' } }]);
    await a.response(1);
    b.send('quota', [{ bucket: { name: 'all' } }]);
    await b.response(1);
    a.send('quota', [{ bucket: { name: 'all' } }]);
    const before = share(await a.response(2));
    await redis.stopRedis();
    try {
      const t0 = performance.now();
      a.send('quota', [{ bucket: { name: 'all' }, allowed: 2 }]);
      const during = await a.response(3);
      expect(performance.now() - t0).toBeLessThan(1500);
      expect(share(during)).toBe(before);
      expect(a.status).toBeUndefined();
    } finally {
      await redis.restart();
    }
  });
});

describe('RLQS across two replicas on Redis Cluster', () => {
  let cluster: ClusterSetup;
  const replicas: TestService[] = [];
  const streams: QuotaStream[] = [];

  beforeAll(async () => {
    cluster = await startCluster();
    const nodes = cluster.nodes.map((n) => `${n.host}:${n.port}`);
    for (let i = 0; i < 2; i++)
      replicas.push(await startTestService({ 'quota.yaml': RULES }, { backend: 'redis', redisType: 'cluster', redisClusterNodes: nodes }));
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    for (const r of replicas) await r.close();
    await cluster?.stop();
  });

  it("shares the limit between the replicas' Envoys: the second joins with what is free, both settle at 10", async () => {
    const [a, b] = replicas.map((r) => {
      const s = new QuotaStream(r.grpcAddress);
      streams.push(s);
      return s;
    }) as [QuotaStream, QuotaStream];
    a.send('quota', [{ bucket: { name: 'all' } }]);
    expect(share(await a.response(1))).toBe(20);
    b.send('quota', [{ bucket: { name: 'all' } }]);
    expect(share(await b.response(1))).toBe(0);
    expect(share(await a.response(2))).toBe(10);
    expect(share(await b.response(2))).toBe(10);
  });
});
