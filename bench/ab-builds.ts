/**
 * Two builds of this service side by side (a change's effect on CPU per request): each build runs
 * compiled (`node <cli.js> serve`) on a redis-server of its own (or the memory store), h2load -c50 -m10
 * drives them in alternated rounds, and the service's CPU per answered request comes from /proc. Prints each
 * round and the median ratio B / A. Copy a build aside first, e.g. `cp -r dist dist/ab/base`. `noop` as a
 * build is the no-op grpc-js server of `npm run bench` (bench/lib/noop-server.ts): with --backend memory, the
 * memory store end to end against the no-op server.
 *
 *   npx tsx bench/ab-builds.ts --a dist/ab/base/cli.js --b dist/cli.js [--descriptors 3] [--requests 20000] [--rounds 5] [--backend redis|memory] [--clients 50 --streams 10]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../test/support/eventually.js';
import { encodeRequest } from '../test/support/raw-rls.js';
import { freePort, startRedis } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';
import { h2load } from './lib/h2load.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { startNoop } from './lib/servers.js';
import { START_NODE_OPTIONS } from './lib/redis-section.js';
import { median } from './lib/stats.js';

const args = benchArgs('bench/ab-builds.ts', {
  a: 'string',
  b: 'string',
  descriptors: 'string',
  requests: 'string',
  rounds: 'string',
  backend: 'string',
  clients: 'string',
  streams: 'string',
});
const builds = { A: args.str('a', 'dist/ab/base/cli.js'), B: args.str('b', 'dist/cli.js') };
const descriptors = args.num('descriptors', 3);
const requests = args.num('requests', 20000);
const rounds = args.num('rounds', 5);
const backend = args.str('backend', 'redis');
const clients = args.num('clients', 50);
const streams = args.num('streams', 10);
const all: [string, string][] = [
  ['user', 'alice'],
  ['ip', '10.0.0.1'],
  ['path', '/api'],
];
const body = encodeRequest(
  'bench',
  all.slice(0, descriptors).map((e) => ({ entries: [e] })),
);
const dir = mkdtempSync(join(tmpdir(), 'rl-ab-'));

function listening(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', reject);
  });
}

/** Answers by FAILURE_MODE so far (the store missed a deadline): they skip Redis, so they cost less CPU. */
async function fallbacks(httpPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^ratelimit_store_fallbacks_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

async function start(cli: string) {
  if (cli === 'noop') {
    const t = await startNoop();
    return { address: t.address, pid: t.pid!, fallbacks: () => Promise.resolve(0), stop: () => t.stop() };
  }
  const redis = backend === 'redis' ? await startRedis() : undefined;
  const port = await freePort();
  const httpPort = await freePort();
  const child = spawn(process.execPath, [...START_NODE_OPTIONS.split(' '), cli, 'serve'], {
    env: {
      ...process.env,
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(httpPort),
      CONFIG_WATCH: 'false',
      LOG_LEVEL: 'error',
      SHUTDOWN_DRAIN_MS: '0',
      CONFIG_DIR: fileURLToPath(new URL('./rules', import.meta.url)),
      BACKEND: backend,
      ...(redis ? { REDIS_URL: redis.url } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await eventually(() => listening(port), { timeoutMs: 20_000, what: `${cli} listening` });
  return {
    address: `127.0.0.1:${port}`,
    pid: child.pid!,
    fallbacks: () => fallbacks(httpPort),
    stop: async () => (child.kill('SIGTERM'), await exited, await redis?.stop()),
  };
}

const servers = { A: await start(builds.A), B: await start(builds.B) };
try {
  for (const s of Object.values(servers)) await h2load({ address: s.address, body, requests: 5000, clients, streams, dir });
  const cpu: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const rps: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const rpsRatios: number[] = [];
  const fallbackCounts: Record<'A' | 'B', number[]> = { A: [], B: [] };
  for (let r = 0; r < rounds; r++) {
    const order: ('A' | 'B')[] = r % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
    for (const k of order) {
      const s = servers[k];
      const before = treeCpuSeconds(s.pid);
      const fell = await s.fallbacks();
      const res = await h2load({ address: s.address, body, requests, clients, streams, dir });
      cpu[k].push(((treeCpuSeconds(s.pid) - before) * 1e6) / Math.max(1, res.ok));
      fallbackCounts[k].push((await s.fallbacks()) - fell);
      rps[k].push(res.rps);
    }
    rpsRatios.push(rps.B.at(-1)! / rps.A.at(-1)!);
    console.log(
      `round ${r + 1}: A ${cpu.A.at(-1)!.toFixed(1)} µs/req ${Math.round(rps.A.at(-1)!)} req/s | B ${cpu.B.at(-1)!.toFixed(1)} µs/req ${Math.round(rps.B.at(-1)!)} req/s | B/A ${(cpu.B.at(-1)! / cpu.A.at(-1)!).toFixed(3)} | answers by FAILURE_MODE: A ${fallbackCounts.A.at(-1)}, B ${fallbackCounts.B.at(-1)}`,
    );
  }
  const ratios = cpu.A.map((a, i) => cpu.B[i]! / a);
  console.log(
    `# ${backend}, ${descriptors} descriptor(s), h2load -c${clients} -m${streams}, ${rounds} rounds of ${requests}: A ${builds.A} ${median(cpu.A).toFixed(1)} µs/req, B ${builds.B} ${median(cpu.B).toFixed(1)} µs/req; CPU B/A median ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}); req/s B/A median ${median(rpsRatios).toFixed(3)} (${Math.min(...rpsRatios).toFixed(3)}–${Math.max(...rpsRatios).toFixed(3)})`,
  );
} finally {
  await servers.A.stop();
  await servers.B.stop();
  rmSync(dir, { recursive: true, force: true });
}
