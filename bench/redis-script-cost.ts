/**
 * What the batch script costs Redis per call, EVALSHA against the same script loaded as a FUNCTION (FCALL),
 * measured from Redis's own `INFO commandstats` (usec_per_call: CPU inside Redis, no network): the real
 * store makes real calls (1 and 3 descriptors), their exact keys and arguments are recorded, then replayed
 * alternately with EVALSHA and FCALL on a fresh redis-server. Measurement only: the store keeps EVALSHA.
 *
 *   npx tsx bench/redis-script-cost.ts [--calls 20000]
 */
import { Redis } from 'ioredis';
import { compileConfigFiles } from '../src/config/index.js';
import { systemClock } from '../src/vocab/clock.js';
import { RateLimiter } from '../src/core/rate-limiter.js';
import { loadBatchScript } from '../src/storage/redis/batch-script.js';
import { createRedisStore } from '../src/storage/redis/redis-store.js';
import { readFileSync } from 'node:fs';
import { rawCommand, startRedis } from '../test/support/redis.js';
import { benchArgs } from './lib/args.js';

const CALLS = benchArgs('bench/redis-script-cost.ts', { calls: 'string' }).num('calls', 20_000);
const redis = await startRedis();
const lua = loadBatchScript().lua;

// 1. Record the EVALSHA arguments of real decisions.
const recorded: { name: string; keys: number; argv: (string | number | Buffer)[] }[] = [];
const store = createRedisStore({ url: redis.url });
await store.waitUntilReady(5000);
const spy = new Redis(redis.url);
// the store calls EVALSHA through ioredis's binary-reply variant (batch-script.ts callBuffer)
const original = Reflect.get(Redis.prototype, 'evalshaBuffer') as (...x: unknown[]) => unknown;
let current = '';
Reflect.set(Redis.prototype, 'evalshaBuffer', function (this: Redis, ...a: unknown[]) {
  if (current !== '' && !recorded.some((r) => r.name === current)) {
    const [, keyCount, rest] = a as [string, number, (string | number | Buffer)[]];
    recorded.push({ name: current, keys: Number(keyCount), argv: rest });
  }
  return original.apply(this, a);
});
const rules = readFileSync(new URL('./rules/bench.yaml', import.meta.url), 'utf8');
const compiled = compileConfigFiles([{ name: 'bench.yaml', text: rules }], { mergeDomains: false });
if (!compiled.ok) throw new Error('rules');
const config = compiled.config;
const limiter = new RateLimiter({
  store,
  clock: systemClock,
  config: () => config,
  keyPrefix: 'rl:',
  headers: { mode: 'none', xRateLimit: false },
  nearLimitRatio: 0.8,
});
current = '1 descriptor';
await limiter.decide({ domain: 'bench', hitsAddend: 0, descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] });
current = '3 descriptors';
await limiter.decide({
  domain: 'bench',
  hitsAddend: 0,
  descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }, { entries: [{ key: 'ip', value: '10.0.0.1' }] }, { entries: [{ key: 'path', value: '/api' }] }],
});
Reflect.set(Redis.prototype, 'evalshaBuffer', original);
await store.close();
if (recorded.length < 2) throw new Error(`recorded ${recorded.length} script calls; the store's call path changed`);

// 2. Load the same script as a function and replay.
const sha = String(await spy.script('LOAD', lua));
await spy.call('FUNCTION', 'LOAD', 'REPLACE', `#!lua name=rlbench\nredis.register_function('rl_batch', function(KEYS, ARGV)\n${lua}\nend)`);
async function usecPerCall(cmd: string): Promise<number> {
  const info = await rawCommand(redis.port, ['INFO', 'commandstats']);
  return Number(new RegExp(`cmdstat_${cmd}:calls=\\d+,usec=\\d+,usec_per_call=([\\d.]+)`).exec(info)?.[1] ?? NaN);
}
console.log(`# Redis CPU per script call (INFO commandstats usec_per_call), ${CALLS} calls each, alternated in 4 blocks`);
console.log('| request | EVALSHA µs/call | FCALL µs/call | FCALL / EVALSHA |');
console.log('|---|---|---|---|');
for (const r of recorded) {
  const e: number[] = [];
  const f: number[] = [];
  for (let block = 0; block < 4; block++) {
    for (const [cmd, out] of [
      ['evalsha', e],
      ['fcall', f],
    ] as const) {
      await spy.call('CONFIG', 'RESETSTAT');
      const pipe = spy.pipeline();
      for (let i = 0; i < CALLS / 4; i++) {
        if (cmd === 'evalsha') pipe.evalsha(sha, r.keys, ...r.argv);
        else pipe.call('FCALL', 'rl_batch', r.keys, ...r.argv);
      }
      await pipe.exec();
      out.push(await usecPerCall(cmd));
    }
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(`| ${r.name} (${r.keys} keys) | ${avg(e).toFixed(2)} | ${avg(f).toFixed(2)} | ${(avg(f) / avg(e)).toFixed(2)} |`);
}
spy.disconnect();
await redis.stop();
