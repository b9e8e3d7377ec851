/**
 * The Redis side-by-side of `npm run bench` alone: this service and envoyproxy/ratelimit, each on
 * its own redis-server, h2load -c50 -m10, 1 and 3 descriptors, alternated rounds; CPU per request of each
 * server and of its Redis.
 *
 *   npx tsx bench/redis-compare.ts [--rounds 3] [--requests 30000] [--young-gen] [--rate 2000] [--rate-seconds 10]
 *   (--young-gen adds this service without the shipped V8 options; --env K=V passes a setting to this service)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeRequest } from '../test/support/raw-rls.js';
import { benchArgs, envPairs } from './lib/args.js';
import { redisSection } from './lib/redis-section.js';

const args = benchArgs('bench/redis-compare.ts', {
  requests: 'string',
  clients: 'string',
  streams: 'string',
  rounds: 'string',
  rate: 'string',
  'rate-seconds': 'string',
  'node-options': 'list',
  env: 'list',
});
const env = envPairs(args.list('env'));
const dir = mkdtempSync(join(tmpdir(), 'rl-bench-redis-'));
try {
  const section = await redisSection({
    rulesDir: fileURLToPath(new URL('./rules', import.meta.url)),
    bodies: {
      '1 descriptor': encodeRequest('bench', [{ entries: [['user', 'alice']] }]),
      '3 descriptors': encodeRequest('bench', [{ entries: [['user', 'alice']] }, { entries: [['ip', '10.0.0.1']] }, { entries: [['path', '/api']] }]),
    },
    requests: args.num('requests', 30000),
    clients: args.num('clients', 50),
    streams: args.num('streams', 10),
    rounds: args.num('rounds', 3),
    rate: args.num('rate', 2000),
    rateSeconds: args.num('rate-seconds', 10),
    nodeOptionVariants: args.list('node-options'),
    dir,
    env,
  });
  console.log(`# npx tsx bench/redis-compare.ts ${args.argv.join(' ')}`.trimEnd());
  console.log(section.text);
  for (const n of section.notes) console.log(`- ${n}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
