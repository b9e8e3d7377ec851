/**
 * RateLimitService vs the Rate Limit Quota Service through real Envoys (docs/rlqs.md, "What to expect"): the
 * service as its own process, two Envoys (--concurrency 1), one rule ({name: all} at --limit/s), --rate requests
 * per second split evenly over both Envoys for --seconds, once through Envoy's ratelimit filter (a call per
 * request) and once through the rate_limit_quota filter as docs/rlqs.md configures it; paths alternated round
 * by round, each run on a fresh service and fresh Envoys (bench/lib/rlqs-run.ts). Prints, per path (medians
 * over the rounds, with their range):
 *   - admitted ÷ limit, overall and from the second second on (the first holds a fixed window's first partial
 *     window, or each Envoy's first, full token bucket);
 *   - request latency through Envoy as the client sees it (p50, p99, every answer: 200 and 429);
 *   - service CPU per request above its rate at rest (from /proc; at rest: the lower of --idle-seconds, default
 *     --seconds, before and after the traffic; /proc counts in 10 ms ticks, so at a few hundred requests the
 *     rate at rest, printed too, bounds the precision);
 *   - messages and bytes Envoy sent to the service per request.
 * Loopback only; everything it starts (service, Envoys, upstream, Redis) is stopped at the end, on an error,
 * on Ctrl-C, and past a time bound.
 *
 *   npx tsx bench/rlqs.ts                      # 2 rounds, 10 s of 40/s against 20/s per path (about 2 minutes)
 *   npm run bench -- --rlqs                    # the same
 *   options: --rounds N --seconds N --rate R --limit L --idle-seconds S --backend memory|redis
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { envoyBinary } from '../test/support/envoy.js';
import { rawCommand, startRedis, type RedisServer } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { measure, type Path, type RunResult } from './lib/rlqs-run.js';
import { fmt, median, table } from './lib/stats.js';

// --rlqs: how `npm run bench` chose this script.
const args = benchArgs('bench/rlqs.ts', {
  rounds: 'string',
  seconds: 'string',
  rate: 'string',
  limit: 'string',
  'idle-seconds': 'string',
  backend: 'string',
  rlqs: 'flag',
});
const opt = (name: 'rounds' | 'seconds' | 'rate' | 'limit' | 'idle-seconds', def: number): number => {
  const n = args.num(name, def);
  if (n <= 0) throw new Error(`bench/rlqs.ts: --${name} must be a positive number, got "${n}"`);
  return n;
};
const SECONDS = Math.min(opt('seconds', 10), 120);
const RATE = Math.min(opt('rate', 40), 2000);
const LIMIT = Math.round(opt('limit', 20));
const ROUNDS = Math.min(Math.round(opt('rounds', 2)), 10);
const IDLE_S = Math.min(opt('idle-seconds', SECONDS), 120);
const BACKEND = args.str('backend', 'memory');
if (BACKEND !== 'memory' && BACKEND !== 'redis') throw new Error(`bench/rlqs.ts: --backend must be memory or redis, got "${BACKEND}"`);
if (SECONDS < 2) throw new Error('bench/rlqs.ts: --seconds must be at least 2 (the first second is reported apart)');

const RULES = `domain: edge\ndescriptors:\n  - key: name\n    value: all\n    rate_limit:\n      unit: second\n      requests_per_unit: ${LIMIT}\n`;
const PATHS: Path[] = ['rls', 'rlqs'];
const NAMES: Record<Path, string> = { rls: 'RateLimitService', rlqs: 'RLQS' };

// Ctrl-C, SIGTERM or the time bound: stop the traffic, then the finally blocks stop every process.
const stop = new AbortController();
let signals = 0;
const onSignal = (): void => {
  if (++signals > 1) process.exit(130);
  process.stderr.write('bench/rlqs.ts: stopping…\n');
  stop.abort();
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
const boundS = ROUNDS * PATHS.length * (SECONDS + 2 * IDLE_S + 90);
const bound = setTimeout(() => {
  process.stderr.write(`bench/rlqs.ts: past its time bound of ${boundS} s, stopping\n`);
  stop.abort();
}, boundS * 1000);
bound.unref();

async function main(): Promise<void> {
  const binary = envoyBinary();
  if (!binary) throw new Error('no Envoy: set ENVOY_BIN, put envoy on PATH, or run npm run envoy:install');
  const load0 = loadavg();
  const started = new Date();
  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-rlqs-'));
  writeFileSync(join(dir, 'edge.yaml'), RULES);
  const upstream = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  let redis: RedisServer | undefined;
  const results = new Map<Path, RunResult[]>(PATHS.map((p) => [p, []]));
  try {
    if (BACKEND === 'redis') redis = await startRedis();
    for (let round = 0; round < ROUNDS; round++) {
      for (const path of round % 2 === 0 ? PATHS : [...PATHS].reverse()) {
        if (redis) await rawCommand(redis.port, ['FLUSHALL']); // no counter or share of an earlier run
        process.stderr.write(`round ${round + 1}/${ROUNDS}: ${NAMES[path]}…\n`);
        const r = await measure({
          path,
          limit: LIMIT,
          rate: RATE,
          seconds: SECONDS,
          idleS: IDLE_S,
          configDir: dir,
          upstreamPort: (upstream.address() as AddressInfo).port,
          ...(redis ? { redisUrl: redis.url } : {}),
          signal: stop.signal,
        });
        process.stderr.write(`  ${JSON.stringify(r)}\n`);
        results.get(path)!.push(r);
      }
    }
  } finally {
    await redis?.stop();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    rmSync(dir, { recursive: true, force: true });
  }
  const load1 = loadavg();
  const cell = (path: Path, f: (r: RunResult) => number, digits: number): string => {
    const xs = results.get(path)!.map(f);
    const lo = Math.min(...xs);
    const hi = Math.max(...xs);
    return xs.length > 1 && fmt(lo, digits) !== fmt(hi, digits)
      ? `${fmt(median(xs), digits)} (${fmt(lo, digits)}–${fmt(hi, digits)})`
      : fmt(median(xs), digits);
  };
  const row = (label: string, f: (r: RunResult) => number, digits: number) => [label, ...PATHS.map((p) => cell(p, f, digits))];
  const la = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  process.stdout.write(
    `# npx tsx bench/rlqs.ts ${args.argv.filter((a) => a !== '--rlqs').join(' ')}`.trimEnd() +
      `\n# ${started.toISOString()}; Envoy ${binary.version} ×2 (--concurrency 1); service BACKEND=${BACKEND}; rule {name: all} ${LIMIT}/s; ` +
      `${RATE}/s (${RATE / 2}/s per Envoy) for ${SECONDS} s; ${ROUNDS} round(s) alternated, medians (range)\n` +
      `# load average ${la(load0)} at the start, ${la(load1)} at the end\n\n` +
      table(
        ['', ...PATHS.map((p) => NAMES[p])],
        [
          row('admitted ÷ limit, overall', (r) => r.ratio, 2),
          row('admitted ÷ limit, after the first second', (r) => r.ratioAfterFirst, 2),
          row('request latency through Envoy, p50 ms', (r) => r.p50, 1),
          row('request latency through Envoy, p99 ms', (r) => r.p99, 1),
          row('service CPU per request above idle, ms', (r) => r.cpuMsPerRequest, 3),
          row('service CPU at rest, ms per second', (r) => r.idleCpuMsPerS, 1),
          row('messages to the service per request', (r) => r.messagesPerRequest, 3),
          row('bytes to the service per request', (r) => r.bytesPerRequest, 1),
        ],
      ) +
      "\n\nmessages: RateLimitService = Envoy's cluster.ratelimit.upstream_rq_total (a call per request); RLQS = usage reports the " +
      "service received (ratelimit_rlqs_reports_total; Envoy 1.40 counts one request per stream); bytes = Envoy's cluster.ratelimit.upstream_cx_tx_bytes_total.\n",
  );
  const problems = [...results].flatMap(([p, rs]) => rs.flatMap((r, i) => r.problems.map((x) => `${NAMES[p]}, run ${i + 1}: ${x}`)));
  for (const p of problems) process.stdout.write(`note: ${p}\n`);
  if (problems.length > 0) process.exitCode = 1;
}

await main()
  .catch((err: unknown) => {
    process.stderr.write(`bench/rlqs.ts: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => {
    clearTimeout(bound);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  });
