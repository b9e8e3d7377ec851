/**
 * Where this service's CPU goes on Redis under the side-by-side load: runs it with
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
import { startRedis } from '../test/support/redis.js';
import { benchArgs, envPairs } from './lib/args.js';
import { h2load } from './lib/h2load.js';
import { summarizeProfile } from './lib/profile-summary.js';
import { START_NODE_OPTIONS } from './lib/redis-section.js';
import { startOurs } from './lib/servers.js';

const args = benchArgs('bench/profile-redis.ts', {
  descriptors: 'string',
  requests: 'string',
  'node-options': 'string',
  env: 'list',
  out: 'string',
  dist: 'string',
});
// The compiled service when built (`npm run build`): a profile of the sources would count tsx's compiling.
const DIST = args.str('dist', fileURLToPath(new URL('../dist/cli.js', import.meta.url)));
const BIN = existsSync(DIST) ? DIST : fileURLToPath(new URL('../bin/ratelimit.mjs', import.meta.url));
const env = envPairs(args.list('env'));
const descriptors = args.num('descriptors', 3);
const requests = args.num('requests', 30000);
const nodeOptions = args.str('node-options', START_NODE_OPTIONS);
const all: [string, string][] = [
  ['user', 'alice'],
  ['ip', '10.0.0.1'],
  ['path', '/api'],
];
const body = encodeRequest(
  'bench',
  all.slice(0, descriptors).map((e) => ({ entries: [e] })),
);
const keep = args.str('out', '');
const dir = keep !== '' ? keep : mkdtempSync(join(tmpdir(), 'rl-profile-'));
mkdirSync(dir, { recursive: true });
const redis = await startRedis();
try {
  // --cpu-prof is refused in NODE_OPTIONS: the flags go on the command line
  const rules = fileURLToPath(new URL('./rules', import.meta.url));
  const ours = await startOurs(
    'ours',
    { NODE_OPTIONS: nodeOptions, CONFIG_DIR: rules, BACKEND: 'redis', REDIS_URL: redis.url, ...env },
    { flags: ['--cpu-prof', `--cpu-prof-dir=${dir}`], cli: BIN },
  );
  await h2load({ address: ours.address, body, requests: 5000, clients: 50, streams: 10, dir });
  const res = await h2load({ address: ours.address, body, requests, clients: 50, streams: 10, dir });
  await ours.stop();
  const file = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .at(-1);
  if (file === undefined) throw new Error('no profile written');
  console.log(`# npx tsx bench/profile-redis.ts ${args.argv.join(' ')}`.trimEnd());
  console.log(
    `# ${BIN === DIST ? 'dist/cli.js (compiled)' : 'sources through tsx (run npm run build for a cleaner profile)'}; ${descriptors} descriptor(s), NODE_OPTIONS=${nodeOptions}, h2load -c50 -m10: ${res.ok} + 5000 warm-up requests, ${Math.round(res.rps)} req/s`,
  );
  console.log(summarizeProfile(join(dir, file), res.ok + 5000));
} finally {
  await redis.stop();
  if (keep === '') rmSync(dir, { recursive: true, force: true });
}
