/**
 * `npm run bench`: every benchmark figure in one run, as ratios to baselines measured in the same run,
 * alternating the servers round by round on the same load. Prints one table and writes it as JSON.
 *
 *   npm run bench                                  # full run (several minutes)
 *   npm run bench -- --smoke                       # seconds: the same code paths, tiny counts
 *   npm run bench -- --audit [--quick]             # the fail-open audit instead (bench/failopen-audit.ts)
 *   npm run bench -- --footprint                   # start-up, CPU at rest, RSS beside envoyproxy/ratelimit (bench/footprint.ts)
 *   npm run bench -- --rlqs                        # RateLimitService vs RLQS through two Envoys (bench/rlqs.ts)
 *   npm run bench -- --against 127.0.0.1:18081     # also drive another RLS server (e.g. envoyproxy/ratelimit)
 *   options: --rounds 3 --requests 60000 --clients 8 --streams 16 --json bench-results.json
 *   Redis side by side with envoyproxy/ratelimit (bench/lib/redis-section.ts; skipped without the
 *   reference binary): --side-requests 30000 --side-clients 50 --side-streams 10 --side-rate 2000, --young-gen
 *   (also this service without the shipped V8 options), --only-redis (that section alone)
 *
 * Needs h2load (apt-get install nghttp2-client) for the gRPC rows; without it they are skipped and said so.
 * Starts its own redis-server on a free port (never 6379). The rules (bench/rules/bench.yaml) suit both this
 * service and envoyproxy/ratelimit, so `--against` compares like with like: start the reference on a Redis
 * of its own with the same rules (docs/performance.md says how).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { startRedis } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { bytesPerKey } from './lib/bytes-per-key.js';
import { compareEngines } from './lib/engine-compare.js';
import { h2load, haveH2load, type LoadResult } from './lib/h2load.js';
import { counter, cpuSeconds, external, startNoop, startOurs, type Target } from './lib/servers.js';
import { fmt, median, ratioText, table } from './lib/stats.js';
import { redisSection, type RedisSection } from './lib/redis-section.js';

const argv = process.argv.slice(2);
if (argv.includes('--audit')) {
  // the fail-open audit (bench/failopen-audit.ts) instead of the benchmarks, with the same options
  const { auditMain } = await import('./failopen-audit.js');
  await auditMain(argv.filter((a) => a !== '--audit'));
} else if (argv.includes('--footprint')) {
  await import('./footprint.js');
  process.exit(process.exitCode ?? 0);
} else if (argv.includes('--rlqs')) {
  await import('./rlqs.js');
  process.exit(process.exitCode ?? 0);
}
const args = benchArgs(
  'npm run bench',
  {
    smoke: 'flag',
    rounds: 'string',
    requests: 'string',
    clients: 'string',
    streams: 'string',
    rate: 'string',
    'rate-seconds': 'string',
    keys: 'string',
    against: 'string',
    'against-pid': 'string',
    json: 'string',
    'only-redis': 'flag',
    'young-gen': 'flag',
    'side-requests': 'string',
    'side-clients': 'string',
    'side-streams': 'string',
    'side-rate': 'string',
  },
  argv,
);
const flag = (name: 'smoke' | 'only-redis' | 'young-gen') => args.flag(name);
const smoke = flag('smoke');
const ROUNDS = args.num('rounds', smoke ? 1 : 3);
const REQUESTS = args.num('requests', smoke ? 2000 : 60000);
const CLIENTS = args.num('clients', 8);
const STREAMS = args.num('streams', 16);
const RATE = args.num('rate', smoke ? 500 : 5000);
const RATE_SECONDS = args.num('rate-seconds', smoke ? 1 : 10);
const KEYS_FOR_BYTES = args.num('keys', smoke ? 20000 : 1000000);
const against = args.has('against') ? args.str('against', '') : undefined;
const againstPid = args.has('against-pid') ? args.num('against-pid', Number.NaN) : undefined;
const jsonPath = args.str('json', smoke ? join(tmpdir(), 'ratelimit-bench-smoke.json') : 'bench-results.json');
const RULES_DIR = fileURLToPath(new URL('./rules', import.meta.url));
const ONLY_REDIS = flag('only-redis');

const BODIES = {
  '1 descriptor': encodeRequest('bench', [{ entries: [['user', 'alice']] }]),
  '3 descriptors': encodeRequest('bench', [{ entries: [['user', 'alice']] }, { entries: [['ip', '10.0.0.1']] }, { entries: [['path', '/api']] }]),
};
type Shape = keyof typeof BODIES;

interface Row {
  scenario: string;
  server: string;
  shape: Shape | '';
  rps: number[];
  /** Server CPU µs per request. */
  cpu: number[];
  p50: number[];
  p99: number[];
  p999: number[];
  baseline?: string;
  ratios: number[];
  /** Baseline CPU per request / ours: the throughput ratio on one core, from CPU time. */
  cpuRatios: number[];
  note?: string;
}

const dir = mkdtempSync(join(tmpdir(), 'rl-bench-run-'));
const rows: Row[] = [];
const notes: string[] = [];
const started: Target[] = [];
const redis = await startRedis();
let side: RedisSection | undefined;
try {
  const hasH2load = await haveH2load();
  if (!hasH2load) notes.push('h2load not found: gRPC rows skipped (apt-get install nghttp2-client)');
  const env = { CONFIG_DIR: RULES_DIR };
  if (hasH2load) {
    side = await redisSection({
      rulesDir: RULES_DIR,
      bodies: BODIES,
      requests: args.num('side-requests', smoke ? 2000 : 30000),
      clients: args.num('side-clients', 50),
      streams: args.num('side-streams', 10),
      rounds: ROUNDS,
      rate: args.num('side-rate', smoke ? 400 : 2000),
      rateSeconds: RATE_SECONDS,
      nodeOptionVariants: flag('young-gen') ? [''] : [],
      dir,
    });
  }
  if (hasH2load && !ONLY_REDIS) {
    const noop = await startNoop();
    started.push(noop);
    const targets: { key: string; target: Target; scenario: string; baseline?: string }[] = [
      { key: 'noop', target: noop, scenario: 'no-op RateLimitService (grpc-js, proto-loader)' },
      {
        key: 'mem-lean',
        target: await startOurs('ours', { ...env, GRPC_TRANSPORT: 'lean' }),
        scenario: 'this service, memory store, lean transport',
        baseline: 'noop',
      },
      {
        key: 'redis-lean',
        target: await startOurs('ours', { ...env, BACKEND: 'redis', REDIS_URL: redis.url }),
        scenario: 'this service, Redis store, lean transport',
        baseline: against !== undefined ? 'against' : 'noop',
      },
    ];
    if (against !== undefined) targets.push({ key: 'against', target: external(against, againstPid), scenario: `RLS server at ${against} (--against)` });
    for (const t of targets.slice(1)) if (t.key !== 'against') started.push(t.target);
    const results = new Map<string, LoadResult[]>();
    const load = async (t: Target, shape: Shape) => {
      const cpu0 = cpuSeconds(t.pid);
      const res = await h2load({ address: t.address, body: BODIES[shape], requests: REQUESTS, clients: CLIENTS, streams: STREAMS, dir });
      res.cpuUs = ((cpuSeconds(t.pid) - cpu0) * 1e6) / res.ok;
      return res;
    };
    for (const t of targets)
      for (const shape of Object.keys(BODIES) as Shape[])
        await h2load({ address: t.target.address, body: BODIES[shape], requests: Math.min(REQUESTS, 5000), clients: CLIENTS, streams: STREAMS, dir });
    const redisTarget = targets.find((t) => t.key === 'redis-lean')!.target;
    const redisBefore = {
      requests: await counter(redisTarget, 'ratelimit_redis_requests_total'),
      trips: await counter(redisTarget, 'ratelimit_redis_round_trips_total'),
    };
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse(); // alternate: no server always runs first
      for (const t of order) {
        for (const shape of Object.keys(BODIES) as Shape[]) {
          const res = await load(t.target, shape);
          if (res.ok !== res.sent) notes.push(`${t.scenario}, ${shape}: ${res.sent - res.ok} of ${res.sent} responses not HTTP 200`);
          const k = `${t.key}|${shape}`;
          results.set(k, [...(results.get(k) ?? []), res]);
        }
      }
    }
    const redisAfter = {
      requests: await counter(redisTarget, 'ratelimit_redis_requests_total'),
      trips: await counter(redisTarget, 'ratelimit_redis_round_trips_total'),
    };
    for (const t of targets) {
      for (const shape of Object.keys(BODIES) as Shape[]) {
        const rs = results.get(`${t.key}|${shape}`)!;
        const base = t.baseline !== undefined ? results.get(`${t.baseline}|${shape}`) : undefined;
        const row: Row = {
          scenario: t.scenario,
          server: t.key,
          shape,
          rps: rs.map((x) => x.rps),
          cpu: rs.map((x) => x.cpuUs ?? Number.NaN),
          cpuRatios: base ? rs.map((x, i) => base[i]!.cpuUs! / x.cpuUs!) : [],
          p50: rs.map((x) => x.p50),
          p99: rs.map((x) => x.p99),
          p999: rs.map((x) => x.p999),
          ratios: base ? rs.map((x, i) => x.rps / base[i]!.rps) : [],
        };
        if (t.baseline !== undefined) row.baseline = targets.find((b) => b.key === t.baseline)!.scenario;
        rows.push(row);
      }
    }
    // Redis on the noop baseline too, for the record: ours on Redis against the no-op server.
    if (against !== undefined) {
      for (const shape of Object.keys(BODIES) as Shape[]) {
        const rs = results.get(`redis-lean|${shape}`)!;
        const base = results.get(`noop|${shape}`)!;
        rows.push({
          scenario: 'this service, Redis store, lean transport',
          server: 'redis-lean',
          shape,
          rps: [],
          cpu: [],
          cpuRatios: rs.map((x, i) => base[i]!.cpuUs! / x.cpuUs!),
          p50: [],
          p99: [],
          p999: [],
          baseline: 'no-op RateLimitService (grpc-js, proto-loader)',
          ratios: rs.map((x, i) => x.rps / base[i]!.rps),
        });
      }
    }
    const perRequest = (redisAfter.trips - redisBefore.trips) / (redisAfter.requests - redisBefore.requests);
    notes.push(`Redis round trips per request under the closed-loop load (${CLIENTS}×${STREAMS} in flight): ${perRequest.toFixed(3)}`);
    // Fixed rate, as a proxy sees it: latency at RATE requests per second on Redis (2 connections).
    const fixed = await h2load({
      address: redisTarget.address,
      body: BODIES['1 descriptor'],
      requests: Math.round((RATE * RATE_SECONDS) / 2),
      clients: 2,
      streams: 100,
      rps: RATE / 2,
      dir,
    });
    rows.push({
      scenario: `this service, Redis store, fixed rate ${fmt(RATE)}/s`,
      server: 'redis-lean',
      shape: '1 descriptor',
      rps: [fixed.rps],
      cpu: [],
      cpuRatios: [],
      p50: [fixed.p50],
      p99: [fixed.p99],
      p999: [fixed.p999],
      ratios: [],
    });
  }

  const engine = ONLY_REDIS ? [] : await compareEngines({ redisUrl: redis.url, total: smoke ? 5000 : 200_000, keys: 10_000, inFlight: 200, rounds: ROUNDS });
  if (typeof engine === 'string') notes.push(engine);
  else
    for (const e of engine)
      rows.push({
        scenario: e.name,
        server: 'engine',
        shape: '',
        rps: e.ours,
        cpu: [],
        cpuRatios: [],
        p50: [],
        p99: [],
        p999: [],
        baseline: 'rate-limiter-flexible',
        ratios: e.ours.map((x, i) => x / e.theirs[i]!),
        note: `rate-limiter-flexible: ${fmt(median(e.theirs))}/s`,
      });

  if (!ONLY_REDIS) notes.push(`memory store at ${fmt(KEYS_FOR_BYTES)} keys: ${bytesPerKey(KEYS_FOR_BYTES)}`);
} finally {
  for (const t of started) await t.stop();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}

const ms = (xs: number[]) => (xs.length === 0 ? '' : median(xs).toFixed(2));
console.log(`# npm run bench -- ${argv.join(' ')}`.trimEnd());
console.log(`# ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; ${ROUNDS} round(s) alternated`);
if (side !== undefined) {
  console.log(`\n## Redis, side by side with envoyproxy/ratelimit\n\n${side.text}`);
  for (const n of side.notes) console.log(`- ${n}`);
  console.log(`\n## All scenarios (closed loop h2load -c${CLIENTS} -m${STREAMS}, ${fmt(REQUESTS)} requests per run)\n`);
}
console.log(
  table(
    [
      'scenario',
      'descriptors',
      'req/s (median)',
      'p50 ms',
      'p99 ms',
      'p99.9 ms',
      'server CPU µs/req',
      'ratio to baseline: req/s',
      'ratio: CPU per request',
      'baseline',
    ],
    rows.map((r) => [
      r.scenario,
      r.shape,
      r.rps.length > 0 ? fmt(median(r.rps)) : '',
      ms(r.p50),
      ms(r.p99),
      ms(r.p999),
      r.cpu.length > 0 && r.cpu.every(Number.isFinite) ? fmt(median(r.cpu), 1) : '',
      r.ratios.length > 0 ? ratioText(r.ratios) : '',
      r.cpuRatios.length > 0 ? ratioText(r.cpuRatios) : '',
      [r.baseline ?? '', r.note ?? ''].filter((x) => x !== '').join('; '),
    ]),
  ),
);
for (const n of notes) console.log(`- ${n}`);
writeFileSync(
  jsonPath,
  JSON.stringify(
    { date: new Date().toISOString(), args: argv, node: process.version, cpus: cpus().map((c) => c.model), rows, notes, redisSideBySide: side ?? null },
    null,
    2,
  ),
);
console.log(`(JSON: ${jsonPath})`);
