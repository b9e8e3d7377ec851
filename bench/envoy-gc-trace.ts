/**
 * Where the tail through Envoy comes from: this service as the image runs it (dist/cli.js, the image's V8 options),
 * on Redis or memory, behind Envoy 1.40 (bench/envoy.ts's config and load: h2load, 16 clients × 4 streams), with
 * V8's GC trace (`--trace-gc-nvp`) read from its stdout. Per round: req/s, p50/p99/p99.9 end to end; then what the
 * trace shows over the measured rounds: scavenges (how often, pause, bytes promoted to the old generation) and
 * full collections (how often, pause, and the phases of the pause that take most of it). A full collection stops
 * the event loop, so every call in flight (64 here) waits for it: that is the p99.9.
 *
 *   npm run build && npx tsx bench/envoy-gc-trace.ts [--backend redis|memory] [--rounds 3] [--requests 20000]
 *       [--node-options '--max-semi-space-size=16'] [--env HEAP_GROWING_PERCENT=0] [--clients 16 --streams 4]
 *   npx tsx bench/envoy-gc-trace.ts --smoke      # seconds: the same code paths, tiny counts
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rlsBootstrap } from '../test/support/envoy-bootstrap.js';
import { envoyBinary, startEnvoy } from '../test/support/envoy.js';
import { startRedis } from '../test/support/redis.js';
import { benchArgs, envPairs } from './lib/args.js';
import { h2load } from './lib/h2load.js';
import { START_NODE_OPTIONS } from './lib/image.js';
import { startOurs, type Target } from './lib/servers.js';
import { fmt, median, table } from './lib/stats.js';

const args = benchArgs('bench/envoy-gc-trace.ts', {
  backend: 'string',
  smoke: 'flag',
  rounds: 'string',
  requests: 'string',
  'node-options': 'string',
  clients: 'string',
  streams: 'string',
  env: 'string',
});
const BACKEND = args.str('backend', 'redis');
const smoke = args.flag('smoke');
const ROUNDS = args.num('rounds', smoke ? 1 : 3);
const REQUESTS = args.num('requests', smoke ? 300 : 20000);
const NODE_OPTIONS = args.str('node-options', START_NODE_OPTIONS);
const CLIENTS = args.num('clients', 16);
const STREAMS = args.num('streams', 4);
const EXTRA_ENV = envPairs(args.str('env', '').split(','));

/** One `--trace-gc-nvp` line: its name=value fields (numbers where they are), and `at`: ms since V8 started. */
function fields(line: string): Map<string, number> {
  const f = new Map([...line.matchAll(/(\S+)=([\d.]+)/g)].map((m) => [m[1]!, Number(m[2])]));
  f.set('at', Number(/(\d+) ms: pause=/.exec(line)?.[1] ?? NaN));
  return f;
}

/** The intervals between consecutive entries, ms. */
const gaps = (list: Map<string, number>[]) => list.slice(1).map((f, i) => f.get('at')! - list[i]!.get('at')!);

async function main(): Promise<void> {
  if (!envoyBinary()) throw new Error('no Envoy: set ENVOY_BIN, put envoy on PATH, or run npm run envoy:install');
  const dir = mkdtempSync(join(tmpdir(), 'rl-gc-trace-'));
  writeFileSync(
    join(dir, 'bench.yaml'),
    'domain: bench\ndescriptors:\n  - key: generic_key\n    value: bench\n    rate_limit: {unit: second, requests_per_unit: 100000000}\n',
  );
  const upstream = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const redis = BACKEND === 'redis' ? await startRedis() : undefined;
  const traceFile = join(dir, 'gc.txt');
  const trace = openSync(traceFile, 'w');
  const rows: string[][] = [];
  let service: Target | undefined;
  let envoy: Awaited<ReturnType<typeof startEnvoy>> | undefined;
  try {
    const env = { NODE_OPTIONS, ...EXTRA_ENV, CONFIG_DIR: dir, BACKEND, ...(redis ? { REDIS_URL: redis.url } : {}) };
    service = await startOurs('ours', env, { flags: ['--trace-gc-nvp'], stdout: trace });
    const ready = () =>
      fetch(`http://${service!.httpAddress}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
    for (let i = 0; !(await ready()); i++) {
      if (i === 200) throw new Error(`the service did not become ready: node ${NODE_OPTIONS}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    envoy = await startEnvoy(
      rlsBootstrap({
        service: { address: '127.0.0.1', port: Number(service.address.split(':')[1]) },
        upstream: { address: '127.0.0.1', port: (upstream.address() as AddressInfo).port },
        domain: 'bench',
        routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'bench' } }] }] }],
        filter: { timeout: '1s' },
      }),
    );
    const port = await envoy.listenerPort('ingress');
    const load = () => h2load({ address: `127.0.0.1:${port}`, requests: REQUESTS, clients: CLIENTS, streams: STREAMS, dir });
    await load(); // warm-up: JIT, connections
    const from = readFileSync(traceFile, 'utf8').split('\n').length - 1;
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await load();
      rows.push([String(round), fmt(r.rps), fmt(r.p50, 2), fmt(r.p99, 2), fmt(r.p999, 2), fmt(r.times.at(-1) ?? NaN, 1)]);
    }
    summarize(readFileSync(traceFile, 'utf8').split('\n').slice(from), rows);
  } finally {
    await envoy?.stop();
    await service?.stop();
    closeSync(trace);
    await redis?.stop();
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Prints the rounds, then the scavenges' and the full collections' figures from the trace lines. */
function summarize(trace: string[], rows: string[][]): void {
  const requests = ROUNDS * REQUESTS;
  const scav = trace.filter((l) => / gc=s /.test(l)).map(fields);
  const full = trace.filter((l) => / gc=mc /.test(l)).map(fields);
  const pick = (list: Map<string, number>[], key: string) => list.map((f) => f.get(key) ?? 0);
  const mean = (xs: number[]) => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
  process.stdout.write(
    `# this service on ${BACKEND}, node ${NODE_OPTIONS}${Object.keys(EXTRA_ENV).length > 0 ? ` ${JSON.stringify(EXTRA_ENV)}` : ''}, Envoy ${envoyBinary()!.version}, ${ROUNDS} × ${fmt(REQUESTS)} requests, ${CLIENTS} clients × ${STREAMS} streams\n\n`,
  );
  process.stdout.write(`${table(['round', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms'], rows)}\n\n`);
  const phases = ['clear.external_string_table', 'evacuate', 'finish', 'mark', 'clear', 'sweep'];
  process.stdout.write(
    `${table(
      [
        'collection',
        'count',
        'per 20,000 requests',
        'pause ms: median / max',
        'between them, ms (median)',
        'promoted KiB (mean)',
        'main phases of the pause, ms (mean)',
      ],
      [
        [
          'scavenge (young)',
          String(scav.length),
          fmt((scav.length * 20_000) / requests, 1),
          `${fmt(median(pick(scav, 'pause')), 1)} / ${fmt(Math.max(...pick(scav, 'pause')), 1)}`,
          fmt(median(gaps(scav)), 0),
          fmt(mean(pick(scav, 'promoted')) / 1024, 0),
          '',
        ],
        [
          'full (mark-compact)',
          String(full.length),
          fmt((full.length * 20_000) / requests, 1),
          `${fmt(median(pick(full, 'pause')), 1)} / ${fmt(Math.max(...pick(full, 'pause'), 0), 1)}`,
          fmt(median(gaps(full)), 0),
          '',
          phases.map((p) => `${p} ${fmt(mean(pick(full, p)), 1)}`).join(', '),
        ],
      ],
    )}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/envoy-gc-trace.ts: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
