/**
 * Quota leases: Redis round trips per request and throughput, with and without leases, against
 * the memory backend, for a hot key (1 key) and a spread (10 000 keys); three replicas (three engines, each
 * with its own store stack and Redis connection, as three pods have) sharing one local redis-server.
 *
 * Every replica runs CONCURRENCY decisions at a time through the real engine (RateLimiter.decide) for
 * REQUESTS decisions in all (a tenth of that at concurrency 1). Two Redis figures: round trips (pipelines
 * written; concurrent requests share one, so under load they say little) and script calls (Redis
 * operations: batch calls, claims and give-backs, each one script run in Redis). The three setups run alternately, ROUNDS times, so the ratios come from one run
 * on one (noisy) machine. Limits are high enough that requests are admitted (a spent limit is answered
 * locally and would flatter leases).
 *
 *   npx tsx bench/leases.ts                       # 60000 requests per row, 2 rounds
 *   REQUESTS=120000 ROUNDS=3 npx tsx bench/leases.ts
 */
import { compileConfigFiles } from '../src/config/index.js';
import type { CompiledConfig } from '../src/config/types.js';
import { systemClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import type { RateLimitRequest } from '../src/vocab/types.js';
import { LeaseManager } from '../src/lease/lease-manager.js';
import { LeaseStore } from '../src/lease/lease-store.js';
import { RedisLeaseBackend } from '../src/lease/redis-backend.js';
import type { CounterStore } from '../src/storage/counter-store.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../src/storage/redis/redis-store.js';
import { ResilientStore } from '../src/storage/resilient.js';
import { startRedis } from '../test/support/redis.js';

const REQUESTS = Number(process.env.REQUESTS ?? 60_000);
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const CONCURRENCIES = (process.env.CONCURRENCY ?? '50,1').split(',').map(Number);
const REPLICAS = 3;

// hot: one key, 5% leases of a limit the load stays under; spread: 10 000 keys with 5% leases of 1000/min.
const rules = (lease: boolean) => `domain: bench
descriptors:
  - key: hot
    rate_limit: {unit: minute, requests_per_unit: 10000000${lease ? ', lease: {size: 5%, ttl: 1s}' : ''}}
  - key: small_lease
    rate_limit: {unit: minute, requests_per_unit: 10000000${lease ? ', lease: {size: 50, ttl: 1s}' : ''}}
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1000${lease ? ', lease: {size: 5%, ttl: 1s}' : ''}}
`;

function compile(text: string): CompiledConfig {
  const r = compileConfigFiles([{ name: 'bench.yaml', text }], { mergeDomains: false });
  if (!r.ok) throw new Error(r.errors.map(String).join('\n'));
  return r.config;
}

interface Replica {
  readonly limiter: RateLimiter;
  readonly redis?: RedisStore;
  readonly leases?: LeaseManager;
  readonly store: CounterStore;
}

type Setup = 'memory' | 'redis' | 'redis + leases';

async function replica(setup: Setup, url: string): Promise<Replica> {
  const config = compile(rules(setup === 'redis + leases'));
  let store: CounterStore;
  let redis: RedisStore | undefined;
  let leases: LeaseManager | undefined;
  if (setup === 'memory') store = new MemoryStore({ maxKeys: 1_000_000 });
  else {
    redis = createRedisStore({ url });
    await redis.waitUntilReady(5000);
    store = new ResilientStore(redis, { mode: 'open', expectedReplicas: REPLICAS, clock: systemClock });
    if (setup === 'redis + leases') {
      leases = new LeaseManager({ backend: new RedisLeaseBackend(redis), clock: systemClock });
      store = new LeaseStore(store, leases, { clock: systemClock });
    }
  }
  const limiter = new RateLimiter({
    store,
    clock: systemClock,
    config: () => config,
    keyPrefix: 'rl:bench:',
    headers: { mode: 'all', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  return { limiter, store, ...(redis ? { redis } : {}), ...(leases ? { leases } : {}) };
}

const workloads: [string, (k: number) => RateLimitRequest][] = [
  ['hot key, 5% lease', () => ({ domain: 'bench', hitsAddend: 0, descriptors: [{ entries: [{ key: 'hot', value: 'x' }] }] })],
  ['hot key, lease of 50', () => ({ domain: 'bench', hitsAddend: 0, descriptors: [{ entries: [{ key: 'small_lease', value: 'x' }] }] })],
  ['spread, 10k keys', (k) => ({ domain: 'bench', hitsAddend: 0, descriptors: [{ entries: [{ key: 'user', value: `u${k % 10_000}` }] }] })],
];

interface Row {
  perSecond: number;
  tripsPerRequest: number;
  callsPerRequest: number;
  admitted: number;
  claims: number;
}

async function measure(setup: Setup, url: string, make: (k: number) => RateLimitRequest, run: string, concurrency: number, requests: number): Promise<Row> {
  const replicas = await Promise.all(Array.from({ length: REPLICAS }, () => replica(setup, url)));
  let next = 0;
  let admitted = 0;
  const redisCount = () => replicas.reduce((n, r) => n + (r.redis?.stats().roundTrips ?? 0), 0);
  const callCount = () =>
    replicas.reduce((n, r) => n + (r.redis?.stats().scriptCalls ?? 0) + (r.leases ? r.leases.stats().claims + r.leases.stats().giveBacks : 0), 0);
  const tripsBefore = redisCount();
  const callsBefore = callCount();
  const started = performance.now();
  await Promise.all(
    replicas.flatMap((r) =>
      Array.from({ length: concurrency }, async () => {
        while (next < requests) {
          const k = next++;
          const request = make(k);
          const d = await r.limiter.decide({
            ...request,
            descriptors: request.descriptors.map((x) => ({ entries: x.entries.map((e) => ({ ...e, value: `${run}-${e.value}` })) })),
          });
          if (d.overallCode === 'OK') admitted++;
        }
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  const trips = redisCount() - tripsBefore;
  const calls = callCount() - callsBefore;
  const claims = replicas.reduce((n, r) => n + (r.leases?.stats().claims ?? 0), 0);
  await Promise.all(replicas.map((r) => r.store.close())); // leases give back here (not counted above)
  return { perSecond: requests / seconds, tripsPerRequest: trips / requests, callsPerRequest: calls / requests, admitted, claims };
}

const server = await startRedis();
console.log(`# ${REQUESTS} requests per row (a tenth at concurrency 1), ${REPLICAS} replicas, ${ROUNDS} rounds alternating, node ${process.version}`);
console.log(`# command: REQUESTS=${REQUESTS} ROUNDS=${ROUNDS} CONCURRENCY=${CONCURRENCIES.join(',')} npx tsx bench/leases.ts\n`);
console.log(
  '| workload | concurrency per replica | round | setup | requests/s | vs memory | Redis round trips/request | Redis script calls/request | claims | admitted |',
);
console.log('|---|---:|---:|---|---:|---:|---:|---:|---:|---:|');
let run = 0;
for (const concurrency of CONCURRENCIES) {
  const requests = concurrency === 1 ? Math.ceil(REQUESTS / 10) : REQUESTS;
  for (const [name, make] of workloads) {
    for (let round = 1; round <= ROUNDS; round++) {
      const order: Setup[] = round % 2 === 1 ? ['memory', 'redis', 'redis + leases'] : ['redis + leases', 'redis', 'memory'];
      const rows = new Map<Setup, Row>();
      for (const setup of order) rows.set(setup, await measure(setup, server.url, make, `r${run++}`, concurrency, requests));
      const memory = rows.get('memory')!.perSecond;
      for (const setup of ['memory', 'redis', 'redis + leases'] as Setup[]) {
        const r = rows.get(setup)!;
        const redis = setup === 'memory' ? ['—', '—'] : [r.tripsPerRequest.toFixed(3), r.callsPerRequest.toFixed(3)];
        console.log(
          `| ${name} | ${concurrency} | ${round} | ${setup} | ${Math.round(r.perSecond)} | ${(r.perSecond / memory).toFixed(2)} | ${redis.join(' | ')} | ${r.claims || '—'} | ${r.admitted} |`,
        );
      }
    }
  }
}
await server.stop();
