/**
 * The Redis state layout 2 of fixed_window (lua/algorithms/fixed_window.lua, src/storage/redis/state-key.ts):
 * the store keeps it under the counter key + ':v2', so a replica of the previous version, which keeps
 * "<start>:<count>" text under the bare key, and this one count apart on one Redis during a rolling upgrade:
 * neither reads the other's value, neither overwrites it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { counterKey } from '../../../src/vocab/keys.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';

const NOW = 1_700_000_040_250;
let h: RedisStoreHandle;
let client: Redis;
beforeAll(async () => {
  h = await startRedisStore('single');
  client = new Redis(h.options.url);
});
afterAll(async () => {
  client.disconnect();
  await closeRedisStores(h);
});

it('counts fixed_window under <key>:v2 and leaves a layout-1 count under the bare key alone', async () => {
  const key = counterKey('rl:', 'layout', [{ key: 'user', value: `u-${process.pid}` }], 'fixed_window', 1000);
  await client.set(key, '1700000040000:4', 'PX', 60_000); // what a replica of the previous version counted
  const check: LimitCheck = { key, algorithm: 'fixed_window', limit: 5, windowMs: 1000, burst: 5, hits: 5, enforce: true };
  const [first] = await h.store.apply([check], NOW);
  expect(first).toMatchObject({ allowed: true, remaining: 0 }); // the 4 of the other version are not ours
  expect(await client.get(key)).toBe('1700000040000:4');
  expect(await client.call('BITFIELD', `${key}:v2`, 'GET', 'i64', '0', 'GET', 'i64', '64')).toEqual([1_700_000_040_000, 5]);
  const pttl = await client.pttl(`${key}:v2`);
  expect(pttl).toBeGreaterThan(0);
  expect(pttl).toBeLessThanOrEqual(750);
  const [second] = await h.store.apply([{ ...check, hits: 1 }], NOW + 1);
  expect(second!.allowed).toBe(false);
});
