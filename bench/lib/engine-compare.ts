/**
 * The decision engine (RateLimiter with the memory or Redis store, no gRPC) against rate-limiter-flexible
 * (RateLimiterMemory / RateLimiterRedis) in one process: the same keys (K distinct users), the same
 * concurrency (C decisions in flight), the same Redis. Runs alternate; reports decisions per second.
 */
import { Redis } from 'ioredis';
import type * as Flexible from 'rate-limiter-flexible';
import { compileConfigFiles } from '../../src/config/index.js';
import { systemClock } from '../../src/vocab/clock.js';
import { RateLimiter } from '../../src/core/rate-limiter.js';
import type { CounterStore } from '../../src/storage/counter-store.js';
import { MemoryStore } from '../../src/storage/memory/memory-store.js';
import { createRedisStore } from '../../src/storage/redis/redis-store.js';

export interface EngineRow {
  readonly name: string;
  readonly ours: number[];
  readonly theirs: number[];
}

type Consume = (key: string) => Promise<unknown>;

/** Runs `total` calls of `fn` over `keys` keys with `inFlight` outstanding; decisions per second. */
async function drive(fn: Consume, total: number, keys: number, inFlight: number): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      await fn(`u${i % keys}`);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return total / ((performance.now() - t0) / 1000);
}

function engine(store: CounterStore): Consume {
  const compiled = compileConfigFiles(
    [{ name: 'bench.yaml', text: 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000000000}\n' }],
    { mergeDomains: false },
  );
  if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
  const config = compiled.config;
  const limiter = new RateLimiter({
    store,
    clock: systemClock,
    config: () => config,
    keyPrefix: 'rl:',
    headers: { mode: 'none', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  return (key) => limiter.decide({ domain: 'bench', hitsAddend: 0, descriptors: [{ entries: [{ key: 'user', value: key }] }] });
}

/** rate-limiter-flexible, if installed (an exact devDependency; `npm ci`). */
async function flexible(): Promise<typeof Flexible | undefined> {
  try {
    return await import('rate-limiter-flexible');
  } catch {
    return undefined;
  }
}

export async function compareEngines(o: { redisUrl: string; total: number; keys: number; inFlight: number; rounds: number }): Promise<EngineRow[] | string> {
  const rlf = await flexible();
  if (rlf === undefined) return 'rate-limiter-flexible is not installed (npm ci installs the devDependency)';
  const memory = new MemoryStore({ maxKeys: 1_000_000 });
  const ourMemory = engine(memory);
  const theirMemory = new rlf.RateLimiterMemory({ points: 1_000_000_000, duration: 60 });
  const redisStore = createRedisStore({ url: o.redisUrl });
  await redisStore.waitUntilReady(5000);
  const ourRedis = engine(redisStore);
  const client = new Redis(o.redisUrl, { enableOfflineQueue: true });
  const theirRedis = new rlf.RateLimiterRedis({ storeClient: client, points: 1_000_000_000, duration: 60, keyPrefix: 'rlf' });
  const rows: EngineRow[] = [
    { name: 'engine, memory store vs RateLimiterMemory', ours: [], theirs: [] },
    { name: 'engine, Redis store vs RateLimiterRedis', ours: [], theirs: [] },
  ];
  const pairs: [Consume, Consume][] = [
    [ourMemory, (k) => theirMemory.consume(k)],
    [ourRedis, (k) => theirRedis.consume(k)],
  ];
  try {
    for (const [ours, theirs] of pairs) {
      await drive(ours, Math.min(o.total, 20_000), o.keys, o.inFlight); // warm up both
      await drive(theirs, Math.min(o.total, 20_000), o.keys, o.inFlight);
    }
    for (let r = 0; r < o.rounds; r++) {
      for (let i = 0; i < pairs.length; i++) {
        const [ours, theirs] = pairs[i]!;
        // alternate which goes first
        if (r % 2 === 0) {
          rows[i]!.ours.push(await drive(ours, o.total, o.keys, o.inFlight));
          rows[i]!.theirs.push(await drive(theirs, o.total, o.keys, o.inFlight));
        } else {
          rows[i]!.theirs.push(await drive(theirs, o.total, o.keys, o.inFlight));
          rows[i]!.ours.push(await drive(ours, o.total, o.keys, o.inFlight));
        }
      }
    }
  } finally {
    client.disconnect();
    await redisStore.close();
    await memory.close();
  }
  return rows;
}
