/**
 * Where this service's CPU goes on Redis under the side-by-side load (issue #20): runs it with
 * `node --cpu-prof` on its own redis-server, drives it with h2load (-c50 -m10, a bounded count), stops it
 * and prints the profile's active time by part (GC, ioredis, node:http2, prom-client, the service's own
 * code, ...) in µs per request and %, and the busiest functions.
 *
 * Profiles dist/ when it is built (npm run build; else the sources, whose compiling then shows up).
 *
 *   npx tsx bench/profile-redis.ts [--descriptors 3] [--requests 30000] [--node-options '--max-semi-space-size=64'] [--env K=V] [--out DIR (keep the .cpuprofile)] [--dist path/to/cli.js (another build)]
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { freePort, startRedis } from '../test/support/redis.js';
import { h2load } from './lib/h2load.js';
import { summarizeProfile } from './lib/profile-summary.js';
import { START_NODE_OPTIONS } from './lib/redis-section.js';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { eventually } from '../test/support/eventually.js';


function expectListening(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve()));
    s.once('error', reject);
  });
}

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : def;
};
// The compiled service when built (`npm run build`): a profile of the sources would count tsx's compiling.
const DIST = opt('dist', fileURLToPath(new URL('../dist/cli.js', import.meta.url)));
const BIN = existsSync(DIST) ? DIST : fileURLToPath(new URL('../bin/ratelimit.mjs', import.meta.url));
const env = Object.fromEntries(args.flatMap((a, i) => (args[i - 1] === '--env' ? [a.split('=', 2) as [string, string]] : [])));
const descriptors = Number(opt('descriptors', '3'));
const requests = Number(opt('requests', '30000'));
const nodeOptions = opt('node-options', START_NODE_OPTIONS);
const all: [string, string][] = [['user', 'alice'], ['ip', '10.0.0.1'], ['path', '/api']];
const body = encodeRequest('bench', all.slice(0, descriptors).map((e) => ({ entries: [e] })));
const keep = opt('out', '');
const dir = keep !== '' ? keep : mkdtempSync(join(tmpdir(), 'rl-profile-'));
mkdirSync(dir, { recursive: true });
const redis = await startRedis();
try {
  // --cpu-prof is refused in NODE_OPTIONS: the flags go on the command line
  const port = await freePort();
  const child = spawn(process.execPath, [...nodeOptions.split(' ').filter((x) => x !== ''), '--cpu-prof', `--cpu-prof-dir=${dir}`, BIN, 'serve'], {
    env: { ...process.env, GRPC_HOST: '127.0.0.1', GRPC_PORT: String(port), HTTP_HOST: '127.0.0.1', HTTP_PORT: String(await freePort()), CONFIG_WATCH: 'false', LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '0', CONFIG_DIR: fileURLToPath(new URL('./rules', import.meta.url)), BACKEND: 'redis', REDIS_URL: redis.url, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ours = { address: `127.0.0.1:${port}`, stop: async () => (child.kill('SIGTERM'), await exited) };
  await eventually(async () => (await expectListening(port), true), { timeoutMs: 20_000, what: 'the service listening' });
  await h2load({ address: ours.address, body, requests: 5000, clients: 50, streams: 10, dir });
  const res = await h2load({ address: ours.address, body, requests, clients: 50, streams: 10, dir });
  await ours.stop();
  const file = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort().at(-1);
  if (file === undefined) throw new Error('no profile written');
  console.log(`# npx tsx bench/profile-redis.ts ${args.join(' ')}`.trimEnd());
  console.log(`# ${BIN === DIST ? 'dist/cli.js (compiled)' : 'sources through tsx (run npm run build for a cleaner profile)'}; ${descriptors} descriptor(s), NODE_OPTIONS=${nodeOptions}, h2load -c50 -m10: ${res.ok} + 5000 warm-up requests, ${Math.round(res.rps)} req/s`);
  console.log(summarizeProfile(join(dir, file), res.ok + 5000));
} finally {
  await redis.stop();
  if (keep === '') rmSync(dir, { recursive: true, force: true });
}
