/**
 * Bytes per key of the memory store, measured: N distinct keys (realistic counter keys from vocab/keys.ts,
 * one fixed_window and one token_bucket run), heapUsed and RSS before and after, each after a full GC.
 * heapUsed excludes ArrayBuffer memory (typed arrays), so heap+buffers is the figure to compare.
 * Also prints the store's own byte estimate (stats().bytes) so the accounting can be compared with the heap.
 *
 *   node --expose-gc --import tsx bench/memory-per-key.ts [--keys 200000,1000000] [--algorithm fixed_window] [--defaults]
 *
 * Each size runs in a fresh process (so one run's garbage cannot flatter the next).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AlgorithmName } from '../src/vocab/algorithm-names.js';
import { counterKey } from '../src/vocab/keys.js';
import type { LimitCheck } from '../src/storage/counter-store.js';
import { MemoryStore } from '../src/storage/memory/memory-store.js';
import { benchArgs } from './lib/args.js';

// --child N: one measurement in a process of its own (how the parent runs each).
const args = benchArgs('bench/memory-per-key.ts', { keys: 'string', algorithm: 'string', defaults: 'flag', child: 'string' });
const arg = (name: 'keys' | 'algorithm' | 'child', def: string): string => args.str(name, def);
const bounded = args.flag('defaults');
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc --import tsx bench/memory-per-key.ts');
  process.exit(2);
}

function fullGc(): void {
  for (let i = 0; i < 4; i++) gc!();
}

async function measure(n: number, algorithm: AlgorithmName): Promise<void> {
  const T0 = 1_700_000_040_000;
  // --defaults: the service's defaults (MEMORY_MAX_KEYS 1,000,000, MEMORY_MAX_BYTES 64 MiB), to see the
  // bound hold; otherwise unbounded, to measure the cost of every key.
  const store = bounded ? new MemoryStore({ maxKeys: 1_000_000 }) : new MemoryStore({ maxKeys: n + 1, maxBytes: Number.MAX_SAFE_INTEGER });
  const check = (i: number): LimitCheck => ({
    key: counterKey('rl:', 'edge', [{ key: 'remote_address', value: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }], algorithm, 60_000),
    algorithm,
    limit: 100,
    windowMs: 60_000,
    burst: 100,
    hits: 1,
    enforce: true,
  });
  // warm the code paths, then measure from a clean heap
  await store.apply([check(n)], T0);
  fullGc();
  const before = process.memoryUsage();
  for (let i = 0; i < n; i++) await store.apply([check(i)], T0 + (i % 1000));
  fullGc();
  const after = process.memoryUsage();
  const heap = (after.heapUsed - before.heapUsed) / n;
  // typed-array columns live outside the JS heap: count them too
  const total = (after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / n;
  const rss = (after.rss - before.rss) / n;
  const stats = (store as unknown as { stats?: () => { bytes: number; keys: number } }).stats?.();
  const estimate = stats !== undefined ? (stats.bytes / stats.keys).toFixed(0) : 'n/a';
  if (bounded && stats !== undefined) {
    console.log(
      `defaults: ${n} keys offered, ${stats.keys} kept, accounted ${(stats.bytes / 2 ** 20).toFixed(1)} MiB (max 64), heap+buffers growth ${((after.heapUsed + after.arrayBuffers - before.heapUsed - before.arrayBuffers) / 2 ** 20).toFixed(1)} MiB`,
    );
  }
  console.log(
    `${algorithm.padEnd(14)} keys=${String(n).padStart(8)} heapUsed/key=${heap.toFixed(0).padStart(4)} B  heap+buffers/key=${total.toFixed(0).padStart(4)} B  rss/key=${rss.toFixed(0).padStart(4)} B  ` +
      `store estimate/key=${estimate} B  (heap ${(after.heapUsed / 2 ** 20).toFixed(0)} MiB, rss ${(after.rss / 2 ** 20).toFixed(0)} MiB)`,
  );
  await store.close();
}

if (args.has('child')) {
  await measure(args.num('child', 0), arg('algorithm', 'fixed_window') as AlgorithmName);
} else {
  const sizes = arg('keys', '200000,1000000').split(',').map(Number);
  const algorithms = arg('algorithm', 'fixed_window,token_bucket').split(',');
  const self = fileURLToPath(import.meta.url);
  for (const algorithm of algorithms) {
    for (const n of sizes) {
      const childArgs = ['--expose-gc', '--import', 'tsx', self, '--child', String(n), '--algorithm', algorithm, ...(bounded ? ['--defaults'] : [])];
      const r = spawnSync(process.execPath, childArgs, { stdio: 'inherit' });
      if (r.status !== 0) process.exit(r.status ?? 1);
    }
  }
}
