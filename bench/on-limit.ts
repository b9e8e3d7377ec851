/**
 * What on_limit costs the engine: one token_bucket limit (50/s per user, 200 users, about half the requests
 * rejected) without on_limit, with exponential backoff and a JSON body, and with delay; on the memory store
 * (engine alone, one request at a time) and on a redis-server started here (64 concurrent requests).
 * Rounds alternate between the variants; medians of 5 are printed with each variant's ratio to the plain one.
 *
 *   npx tsx bench/on-limit.ts
 */
import { compileConfigFiles } from '../src/config/index.js';
import { FakeClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import type { CounterStore } from '../src/storage/counter-store.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { createRedisStore, type RedisStore } from '../src/storage/redis/redis-store.js';
import { startRedis } from '../test/support/redis.js';

const rule = (onLimit: string) =>
  `domain: d\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: second\n      requests_per_unit: 50\n      algorithm: token_bucket\n${onLimit}`;
const VARIANTS: Record<string, string> = {
  plain: rule(''),
  backoff_body: rule(
    `      on_limit: {retry: exponential_backoff, content_type: application/json, body: '{"e":"slow","r":{{retry_after}},"d":"{{descriptor}}"}'}\n`,
  ),
  delay: rule('      on_limit: {action: delay, max_delay: 1ms}\n'),
};

interface Variant {
  readonly name: string;
  readonly limiter: RateLimiter;
  readonly clock: FakeClock;
  readonly store: CounterStore;
}

function variant(name: string, text: string, store: CounterStore): Variant {
  const compiled = compileConfigFiles([{ name: 'd.yaml', text }], { mergeDomains: false });
  if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
  const clock = new FakeClock();
  const limiter = new RateLimiter({
    store,
    clock,
    config: () => compiled.config,
    keyPrefix: `bench-${name}:`,
    headers: { mode: 'all', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  return { name, limiter, clock, store };
}

async function run(v: Variant, count: number, concurrency: number): Promise<number> {
  const started = performance.now();
  let k = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (k < count) {
        const i = k++;
        v.clock.advance(i % 20 === 0 ? 1 : 0);
        await v.limiter.decide({ domain: 'd', hitsAddend: 0, descriptors: [{ entries: [{ key: 'user', value: `u${i % 200}` }] }] });
      }
    }),
  );
  return (count / (performance.now() - started)) * 1000;
}

const redis = await startRedis();
try {
  for (const kind of ['memory', 'redis'] as const) {
    const variants = Object.entries(VARIANTS).map(([name, text]) =>
      variant(name, text, kind === 'memory' ? new MemoryStore({ maxKeys: 1_000_000 }) : createRedisStore({ url: redis.url })),
    );
    if (kind === 'redis') for (const v of variants) await (v.store as RedisStore).waitUntilReady(5000);
    const n = kind === 'memory' ? 60_000 : 15_000;
    const concurrency = kind === 'memory' ? 1 : 64;
    for (const v of variants) await run(v, n / 4, concurrency); // warm-up
    const rates = new Map<string, number[]>();
    for (let round = 0; round < 5; round++) for (const v of variants) rates.set(v.name, [...(rates.get(v.name) ?? []), await run(v, n, concurrency)]);
    const median = (x: readonly number[]) => [...x].sort((a, b) => a - b)[2]!;
    const base = median(rates.get('plain')!);
    const cells = [...rates].map(([name, r]) => `${name} ${median(r).toFixed(0)} req/s (${(median(r) / base).toFixed(2)})`);
    console.log(`${kind}: ${cells.join(', ')}  [medians of 5 alternating rounds of ${n}, concurrency ${concurrency}]`);
    for (const v of variants) await v.store.close();
  }
} finally {
  await redis.stop();
}
