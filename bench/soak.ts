/**
 * Soak: the traffic of test/e2e/traffic.test.ts (Envoy-shaped calls, 1–5 descriptors, 20–50 ms deadlines,
 * hostile values) against the real service process on its own redis-server, for a long time, with a Redis
 * fault (pause, kill -9 + restart, SCRIPT FLUSH, CLIENT KILL) every 20–40 s. Every --interval it prints
 * req/s, errors by gRPC status, late answers (client deadline exceeded / counted by the service), store
 * fallbacks, RSS, heap used and event-loop delay p99 (from the service's /metrics). Exits 1 if the service
 * died, or answered INTERNAL/UNKNOWN.
 *
 *   npm run soak                                  # 10 minutes
 *   npm run soak -- --duration 30s --interval 5s   # quick run
 *   npx tsx bench/soak.ts [--duration 10m] [--interval 10s] [--backend redis|memory] [--faults on|off]
 *                         [--rate 300] [--connections 4] [--seed S]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { emptyStats, RawClientPool, runTraffic, type TrafficStats } from '../test/support/envoy-traffic.js';
import { FaultInjector } from '../test/support/redis-faults.js';
import { startRedis, type RedisServer } from '../test/support/redis.js';
import { prng } from '../test/support/prng.js';
import { gauge, scrapeMetrics, total, type Samples } from '../test/support/scrape.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { EXACT_RULES } from '../test/support/traffic-scenario.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/soak.ts', {
  duration: 'string',
  interval: 'string',
  backend: 'string',
  faults: 'string',
  rate: 'string',
  connections: 'string',
  seed: 'string',
});
const opt = (name: 'duration' | 'interval' | 'backend' | 'faults' | 'seed', def: string) => args.str(name, def);
function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`'${text}' is not a duration (e.g. 30s, 10m)`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
}
const durationMs = duration(opt('duration', '10m'));
const intervalMs = duration(opt('interval', '10s'));
const backend = opt('backend', 'redis');
const faultsOn = opt('faults', 'on') === 'on' && backend === 'redis';
const rate = args.num('rate', 300);
const connections = args.num('connections', 4);
const seed = opt('seed', String(Date.now()));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const mib = (b: number | undefined) => (b === undefined ? '   ?' : (b / 2 ** 20).toFixed(0).padStart(4));

const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'traffic.yaml': EXACT_RULES, 'example.yaml': readFileSync(join(import.meta.dirname, '../config/example.yaml'), 'utf8') });
let redis: RedisServer | undefined;
if (backend === 'redis') redis = await startRedis();
const service = await startImage({ CONFIG_DIR: dir, BACKEND: backend, ...(redis ? { REDIS_URL: redis.url } : {}), LOG_LEVEL: 'info' });
let died: string | undefined;
let stderrTail = '';
service.child.stderr?.on('data', (c: Buffer) => (stderrTail = (stderrTail + c.toString()).slice(-3000)));
service.child.once('exit', (code, signal) => (died = signal ? `signal ${signal}` : `code ${code}`));

console.log(`soak: ${durationMs / 1000} s, backend ${backend}, faults ${faultsOn ? 'on' : 'off'}, ${rate} calls/s on ${connections} connections, seed ${seed}`);
console.log(`command: npx tsx bench/soak.ts ${args.argv.join(' ')}`);
console.log('    t   req/s  errors (this interval)                    late client/service  fallbacks  CPU %  RSS MiB  heap MiB  loop p99 ms');

const pool = new RawClientPool(service.grpcAddress, connections);
const stats: TrafficStats = emptyStats();
const start = Date.now();
const stop = () => Date.now() - start > durationMs || died !== undefined;
const traffic = runTraffic({ pool, random: prng(`soak-${seed}`), ratePerSecond: rate, stop, stats });

const faults = redis ? new FaultInjector([redis.process], prng(`soak-faults-${seed}`)) : undefined;
const faultLoop = (async () => {
  if (!faultsOn || !faults) return;
  const r = prng(`soak-fault-times-${seed}`);
  while (!stop()) {
    const at = Date.now() + r.int(20_000, 40_000);
    while (!stop() && Date.now() < at) await sleep(100);
    if (stop()) break;
    try {
      await faults.injectRandom(2000);
    } catch (error) {
      console.log(`fault failed: ${String(error)}`);
    }
  }
})();

let last = { skipped: 0, calls: 0, byStatus: {} as Record<string, number>, at: start, lateServer: 0, fallbacks: 0, cpu: 0 };
let maxRss = 0;
let maxP99 = 0;
let firstRss: number | undefined;
let lastRss: number | undefined;
while (!stop()) {
  await sleep(Math.min(intervalMs, Math.max(0, durationMs - (Date.now() - start))));
  let m: Samples | undefined;
  try {
    m = await scrapeMetrics(service.httpAddress);
  } catch {
    m = undefined;
  }
  const now = Date.now();
  const errors: string[] = [];
  for (const [k, n] of Object.entries(stats.byStatus)) {
    const d = n - (last.byStatus[k] ?? 0);
    if (k !== 'OK' && d > 0) errors.push(`${k} ${d}`);
  }
  const lateServer = m ? total(m, 'ratelimit_grpc_late_answers_total') : last.lateServer;
  const fallbacks = m ? total(m, 'ratelimit_store_fallbacks_total') : last.fallbacks;
  const cpu = m ? total(m, 'ratelimit_process_cpu_seconds_total') : last.cpu;
  const rss = m ? gauge(m, 'ratelimit_process_resident_memory_bytes') : undefined;
  const heap = m ? gauge(m, 'ratelimit_nodejs_heap_size_used_bytes') : undefined;
  const p99 = m ? gauge(m, 'ratelimit_nodejs_eventloop_lag_p99_seconds') : undefined;
  if (rss !== undefined) {
    firstRss ??= rss;
    lastRss = rss;
    maxRss = Math.max(maxRss, rss);
  }
  if (p99 !== undefined) maxP99 = Math.max(maxP99, p99);
  const deadlineClient = (stats.byStatus['DEADLINE_EXCEEDED'] ?? 0) - (last.byStatus['DEADLINE_EXCEEDED'] ?? 0);
  const skipped = stats.skipped - last.skipped;
  if (skipped > 0) errors.push(`not sent (client saturated) ${skipped}`);
  console.log(
    `${((now - start) / 1000).toFixed(0).padStart(5)} ${(((stats.calls - last.calls) * 1000) / (now - last.at)).toFixed(0).padStart(7)}  ${(errors.join(', ') || '-').padEnd(40)} ${String(deadlineClient).padStart(6)} / ${String(lateServer - last.lateServer).padEnd(6)}   ${String(fallbacks - last.fallbacks).padStart(8)}  ${(((cpu - last.cpu) * 100_000) / (now - last.at)).toFixed(0).padStart(5)}  ${mib(rss)}     ${mib(heap)}     ${p99 === undefined ? '?' : (p99 * 1000).toFixed(1)}`,
  );
  last = { skipped: stats.skipped, calls: stats.calls, byStatus: { ...stats.byStatus }, at: now, lateServer, fallbacks, cpu };
}
await traffic;
const seconds = (Date.now() - start) / 1000;
await faultLoop;
pool.close();

console.log(
  `\ntotal: ${stats.calls} calls in ${seconds.toFixed(0)} s (${(stats.calls / seconds).toFixed(0)}/s); statuses ${JSON.stringify(stats.byStatus)}; overall ${JSON.stringify(stats.byOverall)}`,
);
console.log(
  `RSS first ${mib(firstRss)} MiB, last ${mib(lastRss)} MiB, max ${mib(maxRss)} MiB; event-loop delay p99 max ${(maxP99 * 1000).toFixed(1)} ms; slowest call ${stats.maxMs.toFixed(0)} ms`,
);
if (faults) for (const line of faults.describe(start)) console.log(`fault: ${line}`);
for (const b of stats.bad.slice(0, 10)) console.log(`unexpected: ${b}`);
const failed = died !== undefined || stats.bad.length > 0;
if (died) console.log(`SERVICE DIED (${died}); stderr tail:\n${stderrTail}`);
await service.stop();
await redis?.stop();
rules.remove();
console.log(failed ? 'soak: FAILED' : 'soak: OK');
process.exit(failed ? 1 : 0);
