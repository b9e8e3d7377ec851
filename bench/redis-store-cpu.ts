/**
 * Redis CPU per decided request through the real engine and Redis store, without gRPC: `--inflight` requests
 * kept in flight (closed loop, as h2load -c50 -m10 keeps 500), 1 and 3 descriptors of bench/rules/bench.yaml,
 * on a fresh redis-server. Prints the redis-server's CPU (user + system, from /proc) per request, the
 * requests per script call and the Node process's CPU per request. A quick, steady figure for work on the
 * Lua side (src/storage/redis/); the side by side with envoyproxy/ratelimit is bench/redis-compare.ts.
 *
 *   npx tsx bench/redis-store-cpu.ts [--requests 40000] [--inflight 500] [--rounds 3]
 */
import { readFileSync } from 'node:fs';
import { compileConfigFiles } from '../src/config/index.js';
import { systemClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import { createRedisStore } from '../src/storage/redis/redis-store.js';
import { rawCommand, startRedis } from '../test/support/redis.js';
import { redisPid } from './lib/reference.js';
import { treeCpuSeconds } from './lib/proc-cpu.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/redis-store-cpu.ts', { requests: 'string', inflight: 'string', rounds: 'string', descriptors: 'string' });
const REQUESTS = args.num('requests', 40_000);
const INFLIGHT = args.num('inflight', 500);
const ROUNDS = args.num('rounds', 3);
const ONLY = args.num('descriptors', 0); // 1 or 3: that request alone

const rules = readFileSync(new URL('./rules/bench.yaml', import.meta.url), 'utf8');
const compiled = compileConfigFiles([{ name: 'bench.yaml', text: rules }], { mergeDomains: false });
if (!compiled.ok) throw new Error('bench rules do not compile');
const config = compiled.config;
const bodies = {
  '1 descriptor': [{ entries: [{ key: 'user', value: 'alice' }] }],
  '3 descriptors': [
    { entries: [{ key: 'user', value: 'alice' }] },
    { entries: [{ key: 'ip', value: '10.0.0.1' }] },
    { entries: [{ key: 'path', value: '/api' }] },
  ],
};

const redis = await startRedis();
const pid = await redisPid(redis.port);
const store = createRedisStore({ url: redis.url });
await store.waitUntilReady(5000);
const limiter = new RateLimiter({
  store,
  clock: systemClock,
  config: () => config,
  keyPrefix: 'rl:',
  headers: { mode: 'none', xRateLimit: false },
  nearLimitRatio: 0.8,
});

/** Script calls so far and the µs Redis spent inside them (INFO commandstats). */
async function evalCalls(): Promise<{ calls: number; usec: number }> {
  const info = await rawCommand(redis.port, ['INFO', 'commandstats']);
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval|fcall):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

const rows: string[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, descriptors] of Object.entries(bodies)) {
    if (ONLY !== 0 && descriptors.length !== ONLY) continue;
    const request = { domain: 'bench', hitsAddend: 0, descriptors };
    const calls0 = await evalCalls();
    const redis0 = treeCpuSeconds(pid);
    const self0 = process.cpuUsage();
    let sent = 0;
    let failed = 0;
    const worker = async () => {
      while (sent < REQUESTS) {
        sent++;
        const r = await limiter.decide(request);
        if (r.overallCode !== 'OK') failed++;
      }
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: INFLIGHT }, worker));
    const seconds = (Date.now() - started) / 1000;
    const redisUs = ((treeCpuSeconds(pid) - redis0) * 1e6) / REQUESTS;
    const self = process.cpuUsage(self0);
    const selfUs = (self.user + self.system) / REQUESTS;
    const calls1 = await evalCalls();
    const perCall = REQUESTS / (calls1.calls - calls0.calls);
    const scriptUs = (calls1.usec - calls0.usec) / REQUESTS;
    rows.push(
      `| ${round} | ${name} | ${(REQUESTS / seconds).toFixed(0)} | ${redisUs.toFixed(1)} | ${scriptUs.toFixed(1)} | ${selfUs.toFixed(1)} | ${perCall.toFixed(1)} | ${failed} |`,
    );
    console.log(rows[rows.length - 1]);
  }
}
console.log('| round | request | req/s | Redis CPU µs/req | in the script µs/req | Node CPU µs/req | requests per script call | not OK |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
await store.close();
await redis.stop();
