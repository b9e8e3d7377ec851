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
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rlsBootstrap } from '../test/support/envoy-bootstrap.js';
import { envoyBinary, startEnvoy } from '../test/support/envoy.js';
import { freePort, startRedis } from '../test/support/redis.js';
import { percentile } from './lib/h2load.js';
import { IMAGE_CLI, START_ENV, START_NODE_OPTIONS, ensureBuilt } from './lib/image.js';
import { fmt, median, table } from './lib/stats.js';

const run = promisify(execFile);
const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
};
const BACKEND = opt('backend', 'redis');
const smoke = args.includes('--smoke');
const ROUNDS = Number(opt('rounds', smoke ? '1' : '3'));
const REQUESTS = Number(opt('requests', smoke ? '300' : '20000'));
const NODE_OPTIONS = opt('node-options', START_NODE_OPTIONS);
const CLIENTS = opt('clients', '16');
const STREAMS = opt('streams', '4');
const EXTRA_ENV = Object.fromEntries(opt('env', '').split(',').filter((kv) => kv.includes('=')).map((kv) => kv.split('=') as [string, string]));

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
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'rl-gc-trace-'));
  writeFileSync(join(dir, 'bench.yaml'), 'domain: bench\ndescriptors:\n  - key: generic_key\n    value: bench\n    rate_limit: {unit: second, requests_per_unit: 100000000}\n');
  const upstream = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const redis = BACKEND === 'redis' ? await startRedis() : undefined;
  const traceFile = join(dir, 'gc.txt');
  const [grpc, http] = [await freePort(), await freePort()];
  const env = { ...process.env, ...START_ENV, ...EXTRA_ENV, NODE_OPTIONS: '', CONFIG_DIR: dir, CONFIG_WATCH: 'false', BACKEND, ...(redis ? { REDIS_URL: redis.url } : {}), GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpc), HTTP_HOST: '127.0.0.1', HTTP_PORT: String(http) };
  const child = spawn(process.execPath, [...NODE_OPTIONS.split(' ').filter((o) => o !== ''), '--trace-gc-nvp', IMAGE_CLI, 'serve'], { env, stdio: ['ignore', openSync(traceFile, 'w'), 'ignore'] });
  const exited = new Promise((r) => child.once('exit', r));
  const rows: string[][] = [];
  let envoy: Awaited<ReturnType<typeof startEnvoy>> | undefined;
  try {
    const ready = () => fetch(`http://127.0.0.1:${http}/readyz`).then((r) => r.ok, () => false);
    for (let i = 0; !(await ready()); i++) {
      if (i === 200 || child.exitCode !== null) throw new Error(`the service did not become ready (exit code ${child.exitCode}): node ${NODE_OPTIONS}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    envoy = await startEnvoy(rlsBootstrap({
      service: { address: '127.0.0.1', port: grpc },
      upstream: { address: '127.0.0.1', port: (upstream.address() as AddressInfo).port },
      domain: 'bench',
      routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'bench' } }] }] }],
      filter: { timeout: '1s' },
    }));
    const port = await envoy.listenerPort('ingress');
    const load = async () => {
      const log = join(dir, 'h2load.log');
      const { stdout } = await run('h2load', ['-n', String(REQUESTS), '-c', CLIENTS, '-m', STREAMS, '--log-file', log, `http://127.0.0.1:${port}/`], { maxBuffer: 1 << 24 });
      const times = readFileSync(log, 'utf8').split('\n').filter((l) => l !== '').map((l) => Number(l.split('\t')[2]) / 1000).sort((a, b) => a - b);
      rmSync(log, { force: true });
      return { rps: Number(/([\d.]+) req\/s/.exec(stdout)?.[1] ?? NaN), times };
    };
    await load(); // warm-up: JIT, connections
    const from = readFileSync(traceFile, 'utf8').split('\n').length - 1;
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await load();
      rows.push([String(round), fmt(r.rps), fmt(percentile(r.times, 0.5), 2), fmt(percentile(r.times, 0.99), 2), fmt(percentile(r.times, 0.999), 2), fmt(r.times.at(-1) ?? NaN, 1)]);
    }
    summarize(readFileSync(traceFile, 'utf8').split('\n').slice(from), rows);
  } finally {
    await envoy?.stop();
    child.kill('SIGTERM');
    await exited;
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
  process.stdout.write(`# this service on ${BACKEND}, node ${NODE_OPTIONS}${Object.keys(EXTRA_ENV).length > 0 ? ` ${JSON.stringify(EXTRA_ENV)}` : ''}, Envoy ${envoyBinary()!.version}, ${ROUNDS} × ${fmt(REQUESTS)} requests, ${CLIENTS} clients × ${STREAMS} streams\n\n`);
  process.stdout.write(`${table(['round', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms'], rows)}\n\n`);
  const phases = ['clear.external_string_table', 'evacuate', 'finish', 'mark', 'clear', 'sweep'];
  process.stdout.write(`${table(['collection', 'count', 'per 20,000 requests', 'pause ms: median / max', 'between them, ms (median)', 'promoted KiB (mean)', 'main phases of the pause, ms (mean)'], [
    ['scavenge (young)', String(scav.length), fmt((scav.length * 20_000) / requests, 1), `${fmt(median(pick(scav, 'pause')), 1)} / ${fmt(Math.max(...pick(scav, 'pause')), 1)}`, fmt(median(gaps(scav)), 0), fmt(mean(pick(scav, 'promoted')) / 1024, 0), ''],
    ['full (mark-compact)', String(full.length), fmt((full.length * 20_000) / requests, 1), `${fmt(median(pick(full, 'pause')), 1)} / ${fmt(Math.max(...pick(full, 'pause'), 0), 1)}`, fmt(median(gaps(full)), 0), '', phases.map((p) => `${p} ${fmt(mean(pick(full, p)), 1)}`).join(', ')],
  ])}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/envoy-gc-trace.ts: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
