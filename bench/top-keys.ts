/**
 * The cost of the top limited keys (GET /top) on the decision path: the same engine, rules and traffic with
 * the tracker on and off, in alternating rounds of one run so that the machine's noise hits both alike. CPU
 * time per decision from /proc (the bench's own process); the spread of the "off" rounds is the noise floor.
 *
 *   npx tsx bench/top-keys.ts [--rounds 8] [--requests 100000]
 */
import { compileConfigFiles } from '../src/config/index.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { withTopKeys } from '../src/top/observe-top.js';
import { TopKeys } from '../src/top/top-keys.js';
import { FakeClock } from '../src/vocab/clock.js';
import type { RateLimitRequest } from '../src/vocab/types.js';
import { benchArgs } from './lib/args.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { fmt, median, table } from './lib/stats.js';

const args = benchArgs('bench/top-keys.ts', { rounds: 'string', requests: 'string' });
const rounds = args.num('rounds', 8);
const n = args.num('requests', 100_000);

const RULES = `domain: edge
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: fresh
    rate_limit: {unit: minute, requests_per_unit: 1}
`;
const compiled = compileConfigFiles([{ name: 'edge.yaml', text: RULES }], { mergeDomains: false });
if (!compiled.ok) throw new Error(compiled.errors.map(String).join('\n'));
const config = compiled.config;

/** Counts reports as the metrics observer does, so both engines do the same work besides the tracker. */
const counted = { descriptors: 0 };
const metricsLike = { onDescriptor: () => void counted.descriptors++, onDecision: () => {} };

function engine(top: boolean, clock: FakeClock): RateLimiter {
  const tracker = top ? new TopKeys({ clock, keysPerRule: 10, maxRules: 100, values: 'plain' }) : undefined;
  return new RateLimiter({
    store: new MemoryStore({ maxKeys: 2_000_000 }),
    clock,
    config: () => config,
    keyPrefix: 'rl:',
    headers: { mode: 'all', xRateLimit: false },
    nearLimitRatio: 0.8,
    observer: withTopKeys(metricsLike, tracker),
  });
}

const scenarios: [string, (k: number) => RateLimitRequest][] = [
  // 1 request in 5 from 20 heavy users (over 100 a minute: mostly rejected), the rest spread over 10,000 users (a few each: admitted).
  [
    'mixed: 20% of requests from 20 users over the limit',
    (k) => ({ domain: 'edge', hitsAddend: 1, descriptors: [{ entries: [{ key: 'user', value: k % 5 === 0 ? `heavy-${k % 20}` : `user-${k % 10_000}` }] }] }),
  ],
  // Worst case for the sketch: every request near the limit (1 a minute, first hit) with a value never seen.
  [
    'worst: every request near the limit, each with a new value',
    (k) => ({ domain: 'edge', hitsAddend: 1, descriptors: [{ entries: [{ key: 'fresh', value: `v-${k}` }] }] }),
  ],
];

async function round(limiter: RateLimiter, clock: FakeClock, make: (k: number) => RateLimitRequest, offset: number): Promise<number> {
  clock.advance(60_000); // a new minute per round: the same traffic meets the same limits every round
  const before = treeCpuSeconds(process.pid);
  for (let k = 0; k < n; k++) await limiter.decide(make(offset + k));
  return ((treeCpuSeconds(process.pid) - before) / n) * 1e6;
}

console.log(`# decision-path cost of the top limited keys: ${rounds} alternating rounds of ${n} decisions per side, memory store, node ${process.version}`);
console.log(`# command: npx tsx bench/top-keys.ts ${args.argv.join(' ')}`.trimEnd());
const rows: string[][] = [];
for (const [name, make] of scenarios) {
  const clock = new FakeClock();
  const on = engine(true, clock);
  const off = engine(false, clock);
  for (let k = 0; k < 20_000; k++) {
    await on.decide(make(k));
    await off.decide(make(k));
  }
  const cpu = { on: [] as number[], off: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    // Alternate which side goes first, and give each side the same keys.
    const order = r % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
    for (const side of order) cpu[side].push(await round(side === 'on' ? on : off, clock, make, (r + 1) * n));
  }
  const noise = (Math.max(...cpu.off) - Math.min(...cpu.off)) / median(cpu.off);
  rows.push([
    name,
    fmt(median(cpu.off), 2),
    fmt(median(cpu.on), 2),
    `${fmt(((median(cpu.on) - median(cpu.off)) / median(cpu.off)) * 100, 1)} %`,
    `±${fmt((noise / 2) * 100, 1)} %`,
  ]);
}
console.log(table(['traffic', 'CPU µs/decision, top off (median)', 'top on (median)', 'difference', 'noise (half the spread of the off rounds)'], rows));
