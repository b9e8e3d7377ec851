/**
 * Throughput of throttled rules beside a hard one, through the real engine (RateLimiter) in process, on the
 * memory store and on a freshly started local redis-server (and a 3-master Cluster with --cluster): C workers
 * send requests back to back, no deadline (so no FAILURE_MODE answers blur the figures). Scenarios alternate,
 * ROUNDS times, so ratios come from one run on this noisy shared machine.
 *
 *   npx tsx bench/throttling.ts [--requests 20000] [--concurrency 64] [--rounds 3] [--cluster]
 */
import { compileConfigFiles } from '../src/config/index.js';
import { systemClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import type { CounterStore } from '../src/storage/counter-store.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { createRedisStore } from '../src/storage/redis/redis-store.js';
import { startCluster, startRedis } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { THROTTLING_DESCRIPTORS } from './lib/throttling-rules.js';

const args = benchArgs('bench/throttling.ts', { requests: 'string', concurrency: 'string', rounds: 'string', cluster: 'flag' });
const REQUESTS = args.num('requests', 20000);
const CONCURRENCY = args.num('concurrency', 64);
const ROUNDS = args.num('rounds', 3);

const RULES = `domain: bench
descriptors:
${THROTTLING_DESCRIPTORS}`;
const SCENARIOS = [
  ['hard', 'hard (fixed_window)'],
  ['soft', 'soft 10%'],
  ['elastic', 'elastic, within own limit'],
  ['borrowing', 'elastic, borrowing every request'],
] as const;

const compiled = compileConfigFiles([{ name: 'bench.yaml', text: RULES }], { mergeDomains: false });
if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
const config = compiled.config;

async function measure(store: CounterStore, key: string): Promise<number> {
  const limiter = new RateLimiter({
    store,
    clock: systemClock,
    config: () => config,
    keyPrefix: `rl:b:${Date.now()}:`,
    headers: { mode: 'all', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  let sent = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      while (sent < REQUESTS) {
        sent++;
        await limiter.decide({ domain: 'bench', descriptors: [{ entries: [{ key, value: `u${w % 4}` }] }], hitsAddend: 0 });
      }
    }),
  );
  return REQUESTS / ((performance.now() - t0) / 1000);
}

async function run(name: string, store: CounterStore): Promise<void> {
  const figures = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key] of SCENARIOS) {
      const list = figures.get(key) ?? [];
      list.push(await measure(store, key));
      figures.set(key, list);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const hard = median(figures.get('hard')!);
  console.log(`\n${name}: decisions/s per round, median, and median ÷ hard's`);
  console.log('| scenario | rounds | median | vs hard |');
  console.log('|---|---|---|---|');
  for (const [key, label] of SCENARIOS) {
    const xs = figures.get(key)!;
    console.log(`| ${label} | ${xs.map((x) => Math.round(x)).join(', ')} | ${Math.round(median(xs))} | ${(median(xs) / hard).toFixed(2)} |`);
  }
}

console.log(`# throttling throughput, ${REQUESTS} requests × ${ROUNDS} rounds per scenario, ${CONCURRENCY} in flight, node ${process.version}`);
console.log(`# command: npx tsx bench/throttling.ts ${args.argv.join(' ')}`.trimEnd());
const memory = new MemoryStore({ maxKeys: 100_000 });
await run('memory', memory);
await memory.close();
const redis = await startRedis();
const single = createRedisStore({ url: redis.url });
try {
  await single.waitUntilReady(10_000);
  await run('Redis standalone', single);
} finally {
  await single.close();
  await redis.stop();
}
if (args.flag('cluster')) {
  const cluster = await startCluster();
  const store = createRedisStore({ url: `redis://${cluster.nodes[0]!.host}:${cluster.nodes[0]!.port}`, type: 'cluster', clusterNodes: cluster.nodes });
  try {
    await store.waitUntilReady(10_000);
    await run('Redis Cluster (elastic: aggregate in another slot, 2 script calls within the own limit, 4 when borrowing)', store);
  } finally {
    await store.close();
    await cluster.stop();
  }
}
