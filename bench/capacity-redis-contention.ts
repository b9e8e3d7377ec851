/**
 * Replicas contending for one capacity resource on Redis, in one process (no gRPC, so only the decision, the
 * copy and Redis are measured): 1,000 clients on a FAIR_SHARE resource, then 64 concurrent refresh loops shared
 * by one or two replicas (RedisCapacity, each with its own connection) as fast as they are answered. Reported per
 * replica count: decisions/s, this process's CPU per decision, round trips, copies caught up, batches decided again
 * (retries) and asks that fell back to their held lease after 8 conflicts.
 *
 *   npx tsx bench/capacity-redis-contention.ts [--decisions 6400]
 */
import { FakeClock } from '../src/vocab/clock.js';
import { ask, capacityConfig, startReplica, type Replica } from '../test/support/capacity-redis.js';
import { startRedis } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';

const DECISIONS = benchArgs('bench/capacity-redis-contention.ts', { decisions: 'string' }).num('decisions', 6400);
const LOOPS = 64;

const redis = await startRedis();
try {
  for (const n of [1, 2]) {
    const clock = new FakeClock(1_700_000_000_000);
    const cfg = capacityConfig('FAIR_SHARE', 20_000, 0);
    const replicas: Replica[] = [];
    for (let r = 0; r < n; r++) replicas.push(await startReplica({ url: redis.url }, cfg, clock, `r${r}`));
    const resource = `contention-${n}`;
    for (let c = 0; c < 1000; c++) await ask(replicas[0]!.capacity, `c${c}`, resource, 1 + ((c * 37) % 100));
    for (const r of replicas) await ask(r.capacity, 'c0', resource, 1); // every copy read once before measuring
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: LOOPS }, async (_, loop) => {
        const r = replicas[loop % n]!;
        for (let d = 0; d < DECISIONS / LOOPS; d++) await ask(r.capacity, `c${loop % n}`, resource, 1000);
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    const sum = (f: (r: Replica) => number): number => replicas.reduce((x, r) => x + f(r), 0);
    process.stdout.write(
      `${JSON.stringify({
        replicas: n,
        decisions: DECISIONS,
        perSecond: Math.round(DECISIONS / seconds),
        cpuUsPerDecision: Math.round((cpu.user + cpu.system) / DECISIONS),
        roundTrips: sum((r) => r.capacity.cache.stats.exchanges),
        changesApplied: sum((r) => r.capacity.cache.stats.changesApplied),
        retries: sum((r) => r.capacity.retries),
        fellBack: sum((r) => r.capacity.conflicts),
      })}\n`,
    );
    await Promise.all(replicas.map((r) => r.store.close()));
  }
} finally {
  await redis.stop();
}
