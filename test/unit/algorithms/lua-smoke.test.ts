/**
 * A small smoke test of the Lua fragments against the TypeScript modules on a real redis-server (started
 * here on a free port, stopped after). The full conformance suite (the batch script, memory vs Redis vs
 * Cluster on many traces) lives in test/integration/storage/conformance.test.ts; this one checks each
 * fragment alone, including parameters at the exactness bounds, and the TTL each commit sets.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAlgorithm } from '../../../src/algorithms/registry.js';
import { ALGORITHM_NAMES, PARAM_BOUNDS, type AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import type { AlgorithmParams } from '../../../src/algorithms/types.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { luaLibraries } from '../../../src/storage/redis/batch-script.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { Driver, prng } from './support.js';

const fragment = (name: AlgorithmName): string => readFileSync(new URL(`../../../src/storage/redis/lua/algorithms/${name}.lua`, import.meta.url), 'utf8');
const DRIVER = readFileSync(new URL('./lua-smoke-driver.lua', import.meta.url), 'utf8');

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
});

afterAll(async () => {
  await redis.quit();
  await server.stop();
});

function randomParams(r: ReturnType<typeof prng>, name: AlgorithmName): AlgorithmParams {
  const bucket = name === 'token_bucket' || name === 'leaky_bucket';
  if (r.next() < 0.3) {
    // near the bounds: products far past 2^53 go through the long multiplication
    const limit = r.int(PARAM_BOUNDS.maxLimit - 1_000, PARAM_BOUNDS.maxLimit);
    const windowMs = r.int(PARAM_BOUNDS.maxWindowMs - 1_000_000, PARAM_BOUNDS.maxWindowMs);
    return { limit, windowMs, burst: bucket ? r.int(limit - 1_000_000, limit) : limit };
  }
  const limit = r.int(0, 12);
  return { limit, windowMs: [1_000, 7, 3_600_000, r.int(2, 9_999)][r.int(0, 3)]!, burst: bucket ? r.int(1, 15) : limit };
}

interface Step {
  readonly dt: number;
  readonly hits: number;
}

/** The TTL the driver gives a key after each commit (lua-smoke-driver.lua). */
const KEPT_MS = 2 ** 40;

/** A commit that counts into the window already stored keeps the key's expiry (layout 2 of the window algorithms). */
function keepsExpiry(name: AlgorithmName, before: unknown, next: unknown): boolean {
  const start = (s: unknown) => (s as { start?: number } | undefined)?.start;
  return (name === 'fixed_window' || name === 'sliding_window_counter') && before !== undefined && start(before) === start(next);
}

/** Runs the steps through the fragment (on Redis) and the TypeScript module; they must agree step by step. */
async function compare(name: AlgorithmName, key: string, params: AlgorithmParams, start: number, steps: Step[]): Promise<void> {
  const script = `local ALGORITHMS = {}\n${luaLibraries()}\n${fragment(name)}\n${DRIVER}`;
  const clock = new FakeClock(start);
  const ts = new Driver(getAlgorithm(name), params, clock, false);
  for (const [i, { dt, hits }] of steps.entries()) {
    clock.advance(dt);
    const now = clock.nowMs();
    const before = ts.state;
    const ev = getAlgorithm(name).evaluate(before, now, params, hits);
    const o = ts.hit(hits);
    const args = [name, now, params.limit, params.windowMs, params.burst, hits].map(String);
    const reply = (await redis.eval(script, 1, key, ...args)) as number[];
    const expected = [o.allowed ? 1 : 0, o.remainingIfCommitted, o.remainingIfNotCommitted, o.resetMs];
    expect({ key, step: i, reply: reply.slice(0, 4) }).toEqual({ key, step: i, reply: expected });
    if (o.allowed && hits > 0 && keepsExpiry(name, before, ev.next)) {
      // counted into the window it stored (one BITFIELD INCRBY): the expiry set when the window began stays
      expect(reply[4]).toBeGreaterThan(KEPT_MS - 60_000);
    } else if (o.allowed && hits > 0) {
      // PTTL is read in the same script, after the write: a Redis preempted in between (a loaded machine) reads
      // a few ms less; the expiry was set from `now` all the same.
      expect(reply[4]).toBeGreaterThanOrEqual(ev.ttlMs - 25);
      expect(reply[4]).toBeLessThanOrEqual(ev.ttlMs);
    } else {
      expect(reply[4]).toBe(-3);
    }
  }
}

describe.each(ALGORITHM_NAMES)('Lua fragment %s', (name) => {
  it('decides like the TypeScript module on random traces, near the bounds too, and sets its ttl', async () => {
    for (let seed = 1; seed <= 10; seed++) {
      const r = prng(seed * 7919);
      const params = randomParams(r, name);
      const steps: Step[] = [];
      for (let i = 0; i < 60; i++) {
        const u = r.next();
        const dt = u < 0.5 ? 0 : u < 0.85 ? r.int(0, Math.min(params.windowMs, 5_000)) : r.int(0, 2 * params.windowMs);
        const hits = r.next() < 0.1 ? 0 : r.next() < 0.7 ? 1 : r.int(1, params.limit + 2);
        steps.push({ dt, hits });
      }
      await compare(name, `smoke:${name}:${seed}`, params, 1_700_000_000_000 + r.int(0, 100_000_000), steps);
    }
  });

  it('agrees at exact boundaries (whole emission intervals, full windows, L = 0)', async () => {
    const ones = (n: number, dt = 0): Step[] => Array.from({ length: n }, () => ({ dt, hits: 1 }));
    const steps = [...ones(4), ...ones(3, 100), { dt: 0, hits: 3 }, ...ones(12, 50), { dt: 1_000, hits: 11 }, { dt: 0, hits: 0 }];
    const start = 1_700_000_040_000;
    await compare(name, `edge:${name}:a`, { limit: 10, windowMs: 1_000, burst: 3 }, start, steps);
    await compare(name, `edge:${name}:b`, { limit: 4, windowMs: 1_000, burst: 4 }, start + 999, steps);
    await compare(name, `edge:${name}:c`, { limit: 0, windowMs: 1_000, burst: 1 }, start, steps);
  });

  it('agrees on calls from a clock behind the stored window (a stale replica or a late claim)', async () => {
    const steps: Step[] = [
      { dt: 0, hits: 2 },
      { dt: 1_000, hits: 3 }, // the next window
      { dt: -5, hits: 4 }, // 5 ms before it began: decided in it, never written over it
      { dt: -1_000, hits: 1 },
      { dt: 1_010, hits: 2 },
      { dt: -2_500, hits: 0 },
      { dt: 3_000, hits: 1 },
    ];
    await compare(name, `stale:${name}:a`, { limit: 10, windowMs: 1_000, burst: 10 }, 1_700_000_040_500, steps);
    await compare(name, `stale:${name}:b`, { limit: 6, windowMs: 1_000, burst: 6 }, 1_700_000_040_999, steps);
  });
});

describe.each(['fixed_window', 'sliding_window_counter'] as const)('Lua fragment %s, layout 2', (name) => {
  it('reads a value of another layout (layout 1 text) as empty, never as a count, and replaces it on commit', async () => {
    const script = `local ALGORITHMS = {}\n${luaLibraries()}\n${fragment(name)}\n${DRIVER}`;
    const now = 1_700_000_040_250;
    const params = { limit: 5, windowMs: 1000, burst: 5 };
    const o = getAlgorithm(name).evaluate(undefined, now, params, 5).outcome;
    for (const old of ['1700000040000:4', '1700000040000:4:2', '1700000040000:4:2:1234567', 'garbage', '']) {
      await redis.set('old-layout', old);
      const reply = (await redis.eval(script, 1, 'old-layout', name, now, 5, 1000, 5, 5)) as number[];
      expect(reply.slice(0, 4)).toEqual([1, o.remainingIfCommitted, o.remainingIfNotCommitted, o.resetMs]); // the text counted as nothing
      const state = (await redis.call('BITFIELD', 'old-layout', 'GET', 'i64', '0', 'GET', 'i64', '64')) as number[];
      expect(state).toEqual([1_700_000_040_000, 5]);
      expect(await redis.strlen('old-layout')).toBe(name === 'fixed_window' ? 16 : 24);
    }
  });
});
