/**
 * Where this service's resident memory is, at rest and after each closed-loop load (h2load -c50 -m10, one
 * descriptor, Redis): process.memoryUsage(), V8's heap spaces (physical / used), the GCs so far, and RSS by kind
 * of mapping (/proc/self/smaps), read inside the process by PROBE_SOURCE (below, loaded with `node -r`) on SIGUSR2.
 *
 *   npm run build && npx tsx bench/memory-breakdown.ts [--rounds 2] [--requests 20000]
 *       [--node-options '--max-semi-space-size=16'] [--env HEAP_GROWING_PERCENT=0,MALLOC_ARENA_MAX=2] [--gc]
 * --gc adds --expose-gc, and each reading is followed by one after a full GC (what is live, what V8 returns).
 * A code cache for these V8 options is made first (dist/cli.js otherwise compiles everything: more at rest).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { startRedis } from '../test/support/redis.js';
import { benchArgs, envPairs } from './lib/args.js';
import { rssMiB } from './lib/footprint.js';
import { h2load } from './lib/h2load.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { IMAGE_CLI, START_ENV, START_NODE_OPTIONS, ensureBuilt } from './lib/image.js';
import { startOurs } from './lib/servers.js';

const args = benchArgs('bench/memory-breakdown.ts', { rounds: 'string', requests: 'string', 'node-options': 'string', env: 'string', gc: 'flag' });
/**
 * Loaded into the service (`node -r`): on SIGUSR2 it appends one JSON line to $MEMORY_PROBE_OUT with
 * process.memoryUsage(), V8's heap spaces, the GCs so far and RSS by kind of mapping, then, with --expose-gc, the
 * same after a full GC. Plain CommonJS, written at run time to a fixed path (the code cache is keyed by it).
 */
const PROBE_SOURCE = String.raw`'use strict';
const { appendFileSync, readFileSync } = require('node:fs');
const v8 = require('node:v8');
const { PerformanceObserver, constants } = require('node:perf_hooks');
const MiB = 2 ** 20;
const round = (n) => Math.round((n / MiB) * 10) / 10;
const gcs = { scavenges: 0, fullGcs: 0, scavengeMs: 0, fullGcMs: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) { gcs.scavenges++; gcs.scavengeMs += e.duration; }
    else if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) { gcs.fullGcs++; gcs.fullGcMs += e.duration; }
  }
}).observe({ entryTypes: ['gc'] });
function mappings() {
  const out = {};
  let kind;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      const name = head[1];
      kind = name === '' ? 'anonymous (V8 pages, thread arenas, large mallocs)' : name === '[heap]' ? 'malloc main heap' : name === process.execPath ? 'node binary' : name.startsWith('/') ? 'other files' : 'other';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) out[kind] = (out[kind] || 0) + Number(rss[1]) * 1024;
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, round(v)]));
}
function record(tag) {
  const mu = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().filter((s) => s.physical_space_size > 0).map((s) => [s.space_name, { physical: round(s.physical_space_size), used: round(s.space_used_size) }]));
  const line = { tag, rss: round(mu.rss), heapTotal: round(mu.heapTotal), heapUsed: round(mu.heapUsed), external: round(mu.external), arrayBuffers: round(mu.arrayBuffers), spaces, mappings: mappings(), gcs: { ...gcs, scavengeMs: Math.round(gcs.scavengeMs), fullGcMs: Math.round(gcs.fullGcMs) } };
  appendFileSync(process.env.MEMORY_PROBE_OUT, JSON.stringify(line) + '\n');
}
process.on('SIGUSR2', () => {
  record('as found');
  if (typeof globalThis.gc === 'function') { globalThis.gc(); record('after a full GC'); }
});
`;
const PROBE = join(tmpdir(), 'ratelimit-memory-probe.cjs');
writeFileSync(PROBE, PROBE_SOURCE);
const RULES = fileURLToPath(new URL('./rules', import.meta.url));
const NODE_OPTIONS = args.str('node-options', START_NODE_OPTIONS);
// -r is refused in NODE_OPTIONS: these go on the command line
const flags = [...(args.flag('gc') ? ['--expose-gc'] : []), '-r', PROBE];
const extraEnv = envPairs(args.str('env', '').split(','));
ensureBuilt();
execFileSync(process.execPath, [...flags, IMAGE_CLI], {
  env: { ...process.env, NODE_OPTIONS, RATELIMIT_WRITE_CODE_CACHE: '1', RATELIMIT_CODE_CACHE_RULES: RULES },
  stdio: 'ignore',
});

const dir = mkdtempSync(join(tmpdir(), 'rl-memory-'));
const out = join(dir, 'probe.jsonl');
const BODY = encodeRequest('bench', [{ entries: [['user', 'alice']] }]);
const redis = await startRedis();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lines = () =>
  existsSync(out)
    ? readFileSync(out, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
try {
  const service = await startOurs(
    'ours',
    { NODE_OPTIONS, ...extraEnv, MEMORY_PROBE_OUT: out, CONFIG_DIR: RULES, BACKEND: 'redis', REDIS_URL: redis.url },
    { flags },
  );
  const server = { pid: service.pid!, stop: () => service.stop() };
  const read = async (title: string) => {
    const before = lines().length;
    const rss = rssMiB(server.pid);
    process.kill(server.pid, 'SIGUSR2');
    for (let i = 0; i < 100 && lines().length <= before; i++) await sleep(50);
    await sleep(200);
    console.log(`\n## ${title}: RSS ${rss.toFixed(1)} MiB (from /proc, before the probe)`);
    for (const l of lines().slice(before)) console.log(JSON.stringify(JSON.parse(l), null, 1).replace(/\n\s*/g, ' '));
  };
  console.log(`# node ${flags.join(' ')} dist/cli.js serve ${JSON.stringify({ NODE_OPTIONS, ...START_ENV, ...extraEnv })}`);
  await sleep(2000);
  await read('at rest');
  for (let r = 0; r < args.num('rounds', 2); r++) {
    const cpu0 = treeCpuSeconds(server.pid);
    const res = await h2load({ address: service.address, body: BODY, requests: args.num('requests', 20000), clients: 50, streams: 10, dir });
    const cpuUs = ((treeCpuSeconds(server.pid) - cpu0) * 1e6) / res.ok;
    await read(`after load ${r + 1} (${res.ok} of ${res.sent} OK, ${Math.round(res.rps)} req/s, ${cpuUs.toFixed(0)} µs CPU per request)`);
  }
  await server.stop();
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
