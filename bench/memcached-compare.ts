/**
 * The cost of a decision on memcached: this service (BACKEND=memcached) and envoyproxy/ratelimit
 * (BACKEND_TYPE=memcache), each on a memcached of its own with the same rules (bench/rules: fixed_window),
 * driven by the same closed-loop load (h2load -c50 -m10, a bounded count) with 1 and 3 descriptors, rounds
 * alternated. Per request: req/s, each server's CPU and its memcached's CPU (process trees from /proc), and
 * the ratios to the reference per round.
 *
 *   npx tsx bench/memcached-compare.ts [--rounds 3] [--requests 30000] [--clients 50] [--streams 10]
 *
 * The reference answers after a `get` and adds the hits afterwards (its memcached work of a request partly
 * lands after the answer); the CPU of both is read once the load has ended, so both are counted whole.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { startMemcached, type MemcachedProcess } from '../test/support/memcached.js';
import { benchArgs } from './lib/args.js';
import { haveReference, startReference } from './lib/reference.js';
import { counter, startOurs, type Target } from './lib/servers.js';
import { ratios, sideBySide, type SideTarget } from './lib/redis-side-by-side.js';
import { fmt, median, ratioText, table } from './lib/stats.js';

const args = benchArgs('bench/memcached-compare.ts', { requests: 'string', clients: 'string', streams: 'string', rounds: 'string' });
if (!haveReference()) throw new Error('envoyproxy/ratelimit not found (../shared/tools/envoy-ratelimit, or REFERENCE_START)');
const rulesDir = fileURLToPath(new URL('./rules', import.meta.url));
const bodies = {
  '1 descriptor': encodeRequest('bench', [{ entries: [['user', 'alice']] }]),
  '3 descriptors': encodeRequest('bench', [{ entries: [['user', 'alice']] }, { entries: [['ip', '10.0.0.1']] }, { entries: [['path', '/api']] }]),
};
const dir = mkdtempSync(join(tmpdir(), 'rl-bench-memcached-'));
const servers: MemcachedProcess[] = [];
const started: Target[] = [];
try {
  const [refMc, ourMc] = [await startMemcached(), await startMemcached()];
  servers.push(refMc, ourMc);
  const ref = await startReference(rulesDir, '127.0.0.1:1', undefined, { env: ['BACKEND_TYPE=memcache', `MEMCACHE_HOST_PORT=${refMc.address}`] });
  started.push(ref);
  const ours = await startOurs('ours', { CONFIG_DIR: rulesDir, BACKEND: 'memcached', MEMCACHE_HOST_PORT: ourMc.address });
  started.push(ours);
  const targets: SideTarget[] = [
    { key: 'reference', label: 'envoyproxy/ratelimit', address: ref.address, pid: ref.pid, redisPid: await refMc.pid() },
    { key: 'ours', label: 'this service', address: ours.address, pid: ours.pid, redisPid: await ourMc.pid() },
  ];
  const fallbacks0 = await counter(ours, 'ratelimit_store_fallbacks_total');
  const spec = {
    bodies,
    requests: args.num('requests', 30000),
    clients: args.num('clients', 50),
    streams: args.num('streams', 10),
    rounds: args.num('rounds', 3),
    dir,
  };
  const samples = await sideBySide(targets, spec);
  const rows: string[][] = [];
  const us = (xs: readonly number[]) => fmt(median(xs), 1);
  for (const shape of Object.keys(bodies)) {
    const base = samples.get('reference')!.get(shape)!;
    for (const t of targets) {
      const xs = samples.get(t.key)!.get(shape)!;
      const isRef = t.key === 'reference';
      rows.push([
        shape,
        t.label,
        fmt(median(xs.map((x) => x.rps))),
        us(xs.map((x) => x.cpuUs)),
        us(xs.map((x) => x.redisCpuUs)),
        us(xs.map((x) => x.cpuUs + x.redisCpuUs)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.cpuUs)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.redisCpuUs)),
        isRef ? '' : ratioText(ratios(xs, base, (x) => x.cpuUs + x.redisCpuUs)),
      ]);
    }
  }
  console.log(`# npx tsx bench/memcached-compare.ts ${args.argv.join(' ')}`.trimEnd());
  console.log(
    `h2load -c${spec.clients} -m${spec.streams}, ${spec.requests} requests a run, ${spec.rounds} rounds alternated; medians (ratio: median and range over the rounds)\n`,
  );
  console.log(
    table(
      ['Request', 'Server', 'req/s', 'server CPU µs/req', 'memcached CPU µs/req', 'together µs/req', 'server vs ref', 'memcached vs ref', 'together vs ref'],
      rows,
    ),
  );
  const fallbacks = (await counter(ours, 'ratelimit_store_fallbacks_total')) - fallbacks0;
  if (fallbacks > 0) console.log(`- this service: ${fallbacks} answers by FAILURE_MODE (memcached missed the deadline): not decisions`);
  for (const [key, m] of samples)
    for (const [shape, xs] of m)
      for (const x of xs) if (x.ok !== x.sent) console.log(`- ${key}, ${shape}: ${x.sent - x.ok} of ${x.sent} responses not HTTP 200`);
} finally {
  for (const t of started) await t.stop();
  for (const s of servers) await s.stop();
  rmSync(dir, { recursive: true, force: true });
}
