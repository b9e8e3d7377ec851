/**
 * `npm run bench -- --footprint`: what a sidecar costs at start and at rest, side by side with envoyproxy/ratelimit
 * (../shared/tools/envoy-ratelimit), each on a redis-server of its own, same rules (bench/rules), in one run:
 *   - start-up: exec → first ShouldRateLimit answered OK/OVER_LIMIT (median of --starts, alternated);
 *   - CPU at rest over --idle-seconds (both measured over the same window, from /proc);
 *   - RSS at rest, and after --requests closed-loop requests (h2load -c50 -m10, 1 descriptor);
 * then the through-Envoy tail (bench/envoy.ts), when an Envoy is found (ENVOY_BIN, PATH, npm run envoy:install; else
 * a note says so; --no-envoy skips it). This service runs as its image does:
 * `node <NODE_OPTIONS of npm start> dist/cli.js serve` with the image's MALLOC_ARENA_MAX (built first when dist/ is
 * older than src/).
 *
 *   npm run bench -- --footprint                 # 5 starts, 30 s at rest, 20,000 requests
 *   npm run bench -- --footprint --smoke         # seconds: the same code paths, tiny counts
 *   options: --starts N --idle-seconds S --requests N --node-options '--max-semi-space-size=16'
 *            --semi-space-curve 8,16,32,64 (one row of this service per size) --no-envoy --json FILE
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envoyBinary } from '../test/support/envoy.js';
import { encodeRequest } from '../test/support/raw-rls.js';
import { freePort, startRedis, type RedisServer } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { idleCpuPercent, rssMiB, startAndTime, type Started } from './lib/footprint.js';
import { h2load, haveH2load } from './lib/h2load.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { REFERENCE_START, haveReference } from './lib/reference.js';
import { IMAGE_CLI, START_ENV, START_NODE_OPTIONS, ensureBuilt } from './lib/image.js';
import { fmt, median, table } from './lib/stats.js';

// --footprint: how `npm run bench` chose this script.
const args = benchArgs('npm run bench -- --footprint', {
  footprint: 'flag',
  smoke: 'flag',
  starts: 'string',
  'idle-seconds': 'string',
  requests: 'string',
  json: 'string',
  'semi-space-curve': 'optional',
  'node-options': 'string',
  cli: 'string',
  'no-envoy': 'flag',
});
const smoke = args.flag('smoke');
const STARTS = args.num('starts', smoke ? 1 : 5);
const IDLE_S = args.num('idle-seconds', smoke ? 2 : 30);
const REQUESTS = args.num('requests', smoke ? 1000 : 20000);
const jsonPath = args.str('json', smoke ? join(tmpdir(), `ratelimit-footprint-${process.pid}.json`) : 'bench-footprint.json');
const variants = args.has('semi-space-curve')
  ? (args.str('semi-space-curve', '') || '8,16,32,64').split(',').map((n) => `--max-semi-space-size=${n.trim()}`)
  : [args.str('node-options', START_NODE_OPTIONS)];
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RULES_DIR = fileURLToPath(new URL('./rules', import.meta.url));
const CLI = IMAGE_CLI;
/**
 * --cli a.js,b.js: other builds measured beside dist/cli.js (e.g. before and after a change), with the same V8
 * options, or with their own as `a.js|--max-semi-space-size=64`.
 */
const CLIS = [
  CLI,
  ...args
    .str('cli', '')
    .split(',')
    .filter((c) => c !== ''),
];
const BODY = encodeRequest('bench', [{ entries: [['user', 'alice']] }]);

ensureBuilt();

interface Server {
  readonly label: string;
  start(): Promise<Started>;
}

const load1 = () => loadavg()[0]!;
const redises: RedisServer[] = [];
const servers: Server[] = [];
const dir = mkdtempSync(join(tmpdir(), 'rl-footprint-'));
const notes: string[] = [];
interface Figures {
  startup: number[];
  startupCpu: number[];
  startupLoad: number[];
  idle?: number;
  loadIdle?: number;
  rest?: number;
  after?: number;
  loadAfter?: number;
  rps?: number;
  cpuUs?: number;
}
const figures = new Map<string, Figures>();
try {
  for (const variant of variants)
    for (const entry of CLIS) {
      const [cli = CLI, own] = entry.split('|');
      const nodeOptions = own ?? variant;
      const redis = await startRedis();
      redises.push(redis);
      servers.push({
        label: `this service (node ${nodeOptions}${cli === CLI ? '' : ` ${relative(ROOT, cli)}`})`,
        start: async () => {
          const port = await freePort();
          const env = {
            ...process.env,
            ...START_ENV,
            NODE_OPTIONS: '',
            CONFIG_DIR: RULES_DIR,
            BACKEND: 'redis',
            REDIS_URL: redis.url,
            GRPC_HOST: '127.0.0.1',
            GRPC_PORT: String(port),
            HTTP_HOST: '127.0.0.1',
            HTTP_PORT: String(await freePort()),
          };
          return startAndTime(process.execPath, [...nodeOptions.split(' ').filter((a) => a !== ''), cli, 'serve'], env, port, BODY);
        },
      });
    }
  if (haveReference()) {
    const redis = await startRedis();
    redises.push(redis);
    servers.push({
      label: 'envoyproxy/ratelimit',
      start: async () => {
        const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
        return startAndTime(REFERENCE_START, [String(grpc), String(http), String(debug), RULES_DIR, `127.0.0.1:${redis.port}`], process.env, grpc, BODY, {
          detached: true,
        });
      },
    });
  } else notes.push(`envoyproxy/ratelimit not found (${REFERENCE_START}): this service alone`);
  for (const s of servers) figures.set(s.label, { startup: [], startupCpu: [], startupLoad: [] });

  // Start-up: every server once per round, the order alternated; each stopped before the next starts.
  for (let r = 0; r < STARTS; r++) {
    for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
      const started = await s.start();
      figures.get(s.label)!.startup.push(started.startupMs);
      figures.get(s.label)!.startupCpu.push(started.startupCpuMs);
      figures.get(s.label)!.startupLoad.push(load1());
      await started.stop();
    }
  }

  // At rest, then after load: all running together, measured over the same window.
  const running = await Promise.all(servers.map(async (s) => [s.label, await s.start()] as const));
  try {
    await new Promise((r) => setTimeout(r, smoke ? 200 : 2000)); // the start's own work settles (first GC, lazy compiles)
    const idle = await Promise.all(running.map(([, p]) => idleCpuPercent(p.pid, IDLE_S)));
    const loadIdle = load1();
    running.forEach(([label, p], i) => Object.assign(figures.get(label)!, { idle: idle[i], rest: rssMiB(p.pid), loadIdle }));
    if (await haveH2load()) {
      for (const [label, p] of running) {
        const cpu0 = treeCpuSeconds(p.pid);
        const res = await h2load({ address: `127.0.0.1:${p.port}`, body: BODY, requests: REQUESTS, clients: 50, streams: 10, dir });
        if (res.ok !== res.sent) notes.push(`${label}: ${res.sent - res.ok} of ${res.sent} responses not HTTP 200`);
        if (!Number.isFinite(treeCpuSeconds(p.pid))) notes.push(`${label} stopped during the load`);
        Object.assign(figures.get(label)!, { after: rssMiB(p.pid), loadAfter: load1(), rps: res.rps, cpuUs: ((treeCpuSeconds(p.pid) - cpu0) * 1e6) / res.ok });
      }
    } else notes.push('h2load not found: no RSS after load (apt-get install nghttp2-client)');
  } finally {
    for (const [, p] of running) await p.stop();
  }
} finally {
  for (const r of redises) await r.stop();
  rmSync(dir, { recursive: true, force: true });
}

const ref = figures.get('envoyproxy/ratelimit');
const ratio = (ours: number | undefined, theirs: number | undefined) =>
  ours === undefined || theirs === undefined || !Number.isFinite(ours / theirs) ? '' : `${(ours / theirs).toFixed(2)}×`;
const rows: string[][] = [];
for (const [label, f] of figures) {
  const isRef = f === ref;
  const st = median(f.startup);
  rows.push([
    label,
    `${fmt(st, 0)} (${f.startup.map((x) => fmt(x, 0)).join(', ')})`,
    fmt(median(f.startupCpu), 0),
    f.idle === undefined ? 'n/a' : f.idle.toFixed(2),
    fmt(f.rest ?? NaN, 1),
    fmt(f.after ?? NaN, 1),
    fmt(f.rps ?? NaN),
    fmt(f.cpuUs ?? NaN, 0),
    isRef
      ? ''
      : [
          ratio(st, ref === undefined ? undefined : median(ref.startup)),
          ratio(median(f.startupCpu), ref === undefined ? undefined : median(ref.startupCpu)),
          ratio(f.idle, ref?.idle),
          ratio(f.rest, ref?.rest),
          ratio(f.after, ref?.after),
        ].join(' / '),
  ]);
}
const loads = [...figures.values()].flatMap((f) => f.startupLoad);
console.log(`# npm run bench -- ${args.argv.join(' ')}`.trimEnd());
console.log(
  `# ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}; load average (1 min) during the starts ${fmt(Math.min(...loads), 2)}–${fmt(Math.max(...loads), 2)}, at rest ${fmt([...figures.values()][0]?.loadIdle ?? NaN, 2)}, after the load ${fmt(Math.max(...[...figures.values()].map((f) => f.loadAfter ?? NaN)), 2)}`,
);
console.log(
  `\n## Footprint (start-up: median of ${STARTS}, alternated; CPU at rest over ${IDLE_S} s; RSS after h2load -c50 -m10 -n ${fmt(REQUESTS)}, 1 descriptor)\n`,
);
console.log(
  table(
    [
      'server',
      'start-up ms (each)',
      'CPU ms by then',
      'CPU at rest, % of a core',
      'RSS at rest MiB',
      'RSS after load MiB',
      'load req/s',
      'CPU µs/req under load',
      'ratio to the reference: start-up / its CPU / idle CPU / RSS rest / RSS after',
    ],
    rows,
  ),
);
for (const n of notes) console.log(`- ${n}`);
writeFileSync(
  jsonPath,
  JSON.stringify({ date: new Date().toISOString(), args: args.argv, node: process.version, figures: Object.fromEntries(figures), notes }, null, 2),
);
console.log(`(JSON: ${jsonPath})`);

// The tail users see through Envoy, beside the reference (bench/envoy.ts prints its own table and commands).
if (args.flag('no-envoy')) {
  // skipped on request
} else if (envoyBinary() === undefined) {
  console.log('\n## Through Envoy\n\n- no Envoy found (ENVOY_BIN, PATH or npm run envoy:install): not measured');
} else {
  const envoyArgs = smoke ? ['--smoke'] : [];
  console.log(`\n## Through Envoy (npx tsx bench/envoy.ts ${envoyArgs.join(' ')})\n`.replace(' )', ')'));
  execFileSync(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/envoy.ts'), ...envoyArgs], { cwd: ROOT, stdio: 'inherit' });
}
