/**
 * The decision engine alone (no gRPC, no sockets): rules compiled from config/example.yaml, the memory store,
 * a moving clock. Shows how much of a request's cost is the engine itself versus the gRPC layer
 * (compare with bench/grpc-load.ts).
 *
 *   npx tsx bench/engine.ts [--requests 500000]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileConfigFiles } from '../src/config/index.js';
import { FakeClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import type { RateLimitRequest } from '../src/vocab/types.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/engine.ts', { requests: 'string' });
const n = args.num('requests', 500_000);

const text = readFileSync(join(import.meta.dirname, '../config/example.yaml'), 'utf8');
const compiled = compileConfigFiles([{ name: 'example.yaml', text }], { mergeDomains: false });
if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
const config = compiled.config;
const clock = new FakeClock();
const limiter = new RateLimiter({
  store: new MemoryStore({ maxKeys: 1_000_000 }),
  clock,
  config: () => config,
  keyPrefix: 'rl:',
  headers: { mode: 'all', xRateLimit: false },
  nearLimitRatio: 0.8,
});

const scenarios: [string, (k: number) => RateLimitRequest][] = [
  [
    '1 descriptor (remote_address, 10 000 clients)',
    (k) => ({ domain: 'edge', hitsAddend: 0, descriptors: [{ entries: [{ key: 'remote_address', value: `10.0.${(k >> 8) & 39}.${k & 255}` }] }] }),
  ],
  [
    '3 descriptors, 4 limits (address, api user with 2 limits, plan)',
    (k) => ({
      domain: 'edge',
      hitsAddend: 0,
      descriptors: [
        { entries: [{ key: 'remote_address', value: `10.1.${(k >> 8) & 39}.${k & 255}` }] },
        {
          entries: [
            { key: 'generic_key', value: 'api' },
            { key: 'user', value: `user-${k % 10_000}` },
          ],
        },
        {
          entries: [
            { key: 'plan', value: 'free' },
            { key: 'user', value: `user-${k % 10_000}` },
          ],
        },
      ],
    }),
  ],
];

console.log(`# engine only, memory store, ${n} decisions per scenario, node ${process.version}`);
console.log(`# command: npx tsx bench/engine.ts ${args.argv.join(' ')}`.trimEnd());
for (const [name, make] of scenarios) {
  for (let k = 0; k < 20_000; k++) await limiter.decide(make(k)); // warm up
  const t0 = process.hrtime.bigint();
  for (let k = 0; k < n; k++) {
    if (k % 1000 === 0) clock.advance(1);
    await limiter.decide(make(k));
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`${name}: ${Math.round(n / s)} decisions/s (${((s / n) * 1e6).toFixed(2)} µs each)`);
}
