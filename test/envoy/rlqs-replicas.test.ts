/**
 * The Rate Limit Quota Service on two replicas sharing one redis-server (BACKEND=redis, started here), with
 * two real Envoys (1.40, --concurrency 1) running the config published in docs/rlqs.md, each Envoy's
 * `ratelimit` cluster pointing at a different replica:
 *
 * - {name: all} at 20/s under 40/s of traffic (20/s through each Envoy): together they admit 0.8–1.15× of the
 *   global limit once both hold an assignment, as on one replica; the rest is answered 429;
 * - one replica stopped and restarted on the same port: its Envoy keeps its last share meanwhile, and both
 *   Envoys are assigned again (the sum within the limit) within 10 s of its return.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { pacedTraffic, rlqsDocBlock, rlqsEnvoyConfig } from '../support/rlqs.js';
import { startTestService, type TestService } from '../support/service.js';

const RUN_MS = 8000;

interface Described {
  buckets: { bucket: Record<string, string>; holders: { share: number }[] }[];
}

describeEnvoy('RLQS: two replicas on one Redis behind two Envoys', () => {
  let redis: RedisServer;
  let upstream: Upstream;
  const replicas: TestService[] = [];
  const envoys: EnvoyProcess[] = [];
  const urls: string[] = [];

  const startReplica = (grpcPort = 0) => startTestService({ 'edge.yaml': rlqsDocBlock('rlqs-rules') }, { backend: 'redis', redisUrl: redis.url, grpcPort });
  /** This replica's Envoys' shares of {name: all}. */
  const shares = async (r: TestService): Promise<number[]> => {
    const view = (await (await fetch(`${r.httpBase}/rlqs`)).json()) as Described;
    return view.buckets.find((b) => b.bucket['name'] === 'all')?.holders.map((h) => h.share) ?? [];
  };
  /** Each Envoy holds a share above 0 of {name: all} (and, `withinLimit`, the shares add up to at most 20). */
  const bothAssigned = async (withinLimit = true): Promise<boolean> => {
    const [a, b] = await Promise.all(replicas.map(shares));
    return a!.length === 1 && b!.length === 1 && a![0]! > 0 && b![0]! > 0 && (!withinLimit || a![0]! + b![0]! <= 20);
  };

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    for (let i = 0; i < 2; i++) {
      const replica = await startReplica();
      replicas.push(replica);
      const envoy = await startEnvoy(rlqsEnvoyConfig(replica.grpcAddress, upstream.port));
      envoys.push(envoy);
      urls.push(await envoy.listenerUrl('ingress'));
    }
  }, 60_000);
  afterAll(async () => {
    for (const e of envoys) await e.stop();
    await upstream?.close();
    for (const r of replicas) await r.close();
    await redis?.stop();
  });

  it('keeps 20/s across both Envoys under 40/s, each on its own replica', async () => {
    for (const url of urls) await (await fetch(`${url}/warm-up`)).arrayBuffer();
    // An Envoy joining where the other holds the whole limit is DENY_ALL until the other shrank (a second or two).
    await eventually(() => bothAssigned(false), { timeoutMs: 10_000, intervalMs: 100, what: 'both Envoys assigned' });
    const [a, b] = await Promise.all(urls.map((u) => pacedTraffic(`${u}/all`, 20, RUN_MS)));
    const seconds = RUN_MS / 1000;
    const admitted = (a!.byStatus.get(200) ?? 0) + (b!.byStatus.get(200) ?? 0);
    const denied = (a!.byStatus.get(429) ?? 0) + (b!.byStatus.get(429) ?? 0);
    const report = {
      admitted,
      denied,
      ratio: admitted / (20 * seconds),
      perSecond: [a!.admittedPerSecond, b!.admittedPerSecond],
      shares: await Promise.all(replicas.map(shares)),
    };
    process.stderr.write(`rlqs two replicas: ${JSON.stringify(report)}\n`);
    expect(admitted + denied).toBe(a!.sent + b!.sent);
    expect(admitted / (20 * seconds)).toBeGreaterThanOrEqual(0.8);
    expect(admitted / (20 * seconds)).toBeLessThanOrEqual(1.15);
    expect(report.shares.flat().reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(20);
  }, 60_000);

  it('keeps the last shares while one replica is gone, and assigns both Envoys again within 10 s of its return', async () => {
    const port = Number(replicas[0]!.grpcAddress.split(':')[1]);
    await replicas[0]!.close();
    const stop = new AbortController();
    const traffic = Promise.all(urls.map((u) => pacedTraffic(`${u}/restart`, 20, 30_000, {}, stop.signal)));
    const admittedSince = (mark: number) => upstream.requests.slice(mark).filter((r) => r.url === '/restart').length;
    try {
      let mark = upstream.requests.length;
      await new Promise((r) => setTimeout(r, 2000));
      const goneRate = admittedSince(mark) / 2;
      replicas[0] = await startReplica(port);
      const back = performance.now();
      // Envoy retries its stream on its 5 s tick; the restarted replica's book starts empty and learns the other
      // replica's Envoy from Redis.
      await eventually(bothAssigned, { timeoutMs: 10_000, intervalMs: 100, what: 'both Envoys assigned again' });
      const reassignedS = (performance.now() - back) / 1000;
      mark = upstream.requests.length;
      await new Promise((r) => setTimeout(r, 3000));
      const rate = admittedSince(mark) / 3;
      process.stderr.write(
        `rlqs two replicas, one restarted: ${goneRate}/s admitted while it was gone, assigned again after ${reassignedS.toFixed(1)} s, then ${rate.toFixed(1)}/s admitted; shares ${JSON.stringify(await Promise.all(replicas.map(shares)))}\n`,
      );
      // While it was gone, its Envoy kept its last share (TTL 30 s) and the other replica's Envoy its own.
      expect(goneRate).toBeLessThanOrEqual(1.15 * 20);
      expect(rate).toBeGreaterThanOrEqual(0.8 * 20);
      expect(rate).toBeLessThanOrEqual(1.15 * 20 + 10); // plus, at most, a fresh bucket's fill
    } finally {
      stop.abort();
    }
    for (const r of await traffic) expect((r.byStatus.get(200) ?? 0) + (r.byStatus.get(429) ?? 0)).toBe(r.sent);
  }, 60_000);
});
