/**
 * Cross-request batching (request-batcher.ts, lua/requests.lua) on a real redis-server: the requests of one
 * event-loop turn share a script call, within its bounds, and each is still decided on its own: one
 * request's error fails that request alone, one request's rejection consumes nothing and does not stop the
 * others, and an expired request in a batch is refused while its neighbours are counted.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { BatchCommands, decodeBatchReply, encodeBatch, loadBatchScript } from '../../../src/storage/redis/batch-script.js';
import { stateKey } from '../../../src/storage/redis/state-key.js';
import type { AlgorithmName } from '../../../src/vocab/algorithm-names.js';
import { RequestBatcher, type BatchLimits, type ScriptRequest } from '../../../src/storage/redis/request-batcher.js';
import { closeRedisStores, startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';

const NOW = 1_700_000_000_000;
const check = (key: string, limit = 5, hits = 1): LimitCheck => ({ key, algorithm: 'fixed_window', limit, windowMs: 60_000, burst: 1, hits, enforce: true });

let h: RedisStoreHandle;
beforeAll(async () => {
  h = await startRedisStore('single');
});
afterAll(() => closeRedisStores(h));

it('sends the requests of one turn as one call, each decided in order and all-or-nothing on its own', async () => {
  const before = h.store.stats();
  const results = await Promise.all([
    h.store.apply([check('bt:a', 2, 2)], NOW), // fills bt:a
    h.store.apply([check('bt:b'), check('bt:a', 2, 1)], NOW), // rejected by bt:a: bt:b must not count
    h.store.apply([check('bt:b')], NOW), // sees bt:b untouched by the rejected request
  ]);
  const after = h.store.stats();
  expect(after.scriptBatches - before.scriptBatches).toBe(1);
  expect(after.scriptCalls - before.scriptCalls).toBe(3);
  expect(results.map((r) => r.map((o) => [o.allowed, o.remaining]))).toEqual([
    [[true, 0]],
    [
      [true, 5],
      [false, 0],
    ],
    [[true, 4]],
  ]);
});

it('bounds a batch by count: 300 requests of one turn take three calls', async () => {
  const before = h.store.stats().scriptBatches;
  const results = await Promise.all(Array.from({ length: 300 }, (_, i) => h.store.apply([check(`bt:n:${i}`)], NOW)));
  expect(results.map((r) => [r[0]!.allowed, r[0]!.remaining])).toEqual(results.map(() => [true, 4]));
  expect(h.store.stats().scriptBatches - before).toBe(3); // 128 + 128 + 44
});

/** A batcher on a client of its own (closed after `body`), for calls built by hand. */
async function withBatcher(limits: BatchLimits | undefined, body: (batcher: RequestBatcher, client: Redis) => Promise<void>): Promise<void> {
  const client = new Redis(h.options.url);
  try {
    await body(new RequestBatcher(new BatchCommands(client, loadBatchScript()), limits), client);
  } finally {
    client.disconnect();
  }
}

/** The count of a fixed_window state (lua/algorithms/fixed_window.lua: start and count, two 64-bit integers). */
async function fixedWindowCount(client: Redis, key: string): Promise<number> {
  const [, count] = (await client.call('BITFIELD', stateKey(key, 'fixed_window'), 'GET', 'i64', '0', 'GET', 'i64', '64')) as number[];
  return count!;
}

/** One check of 5 per minute as batch.lua reads it (encodeBatch); `expires` is its expiry in Redis's clock. */
function request(key: string, algorithm = 'fixed_window', expires = 0, degradeKey = ''): ScriptRequest {
  const check: LimitCheck = {
    key,
    algorithm: algorithm as AlgorithmName,
    limit: 5,
    windowMs: 60_000,
    burst: 1,
    hits: 1,
    enforce: true,
    ...(degradeKey === '' ? {} : { onLimit: { degradeKey } }),
  };
  return encodeBatch([check], NOW, true, expires);
}

it('bounds a batch by bytes, and a request larger than the bound goes alone', async () => {
  await withBatcher({ maxRequests: 128, maxBytes: 1000 }, async (batcher) => {
    const small = request('bt:s');
    const replies = await Promise.all([
      batcher.submit(0, small),
      batcher.submit(0, request('bt:big', 'fixed_window', 0, 'x'.repeat(3000))),
      ...Array.from({ length: 20 }, () => batcher.submit(0, small)),
    ]);
    expect(replies.every((r) => decodeBatchReply(r, 1).outcomes.length === 1)).toBe(true);
    // the big one alone; the 21 small ones (about 190 bytes each by the batcher's estimate: a key and 21
    // packed doubles) in calls of at most 1000 bytes: at least four calls, far fewer than one each
    expect(batcher.calls).toBeGreaterThanOrEqual(1 + 4);
    expect(batcher.calls).toBeLessThanOrEqual(1 + 7);
  });
});

it('fails one malformed request alone: its neighbours in the call are decided', async () => {
  await withBatcher(undefined, async (batcher, client) => {
    const settled = await Promise.allSettled([
      batcher.submit(0, request('bt:ok')),
      batcher.submit(0, request('bt:bad', 'no_such_algorithm')),
      batcher.submit(0, request('bt:ok')),
    ]);
    expect(batcher.calls).toBe(1);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((settled[1] as PromiseRejectedResult).reason)).toContain('unknown algorithm');
    expect(await fixedWindowCount(client, 'bt:ok')).toBe(2);
  });
});

it('refuses an expired request in a batch and counts its neighbours', async () => {
  await withBatcher(undefined, async (batcher, client) => {
    const replies = await Promise.all([
      batcher.submit(0, request('bt:live')),
      batcher.submit(0, request('bt:expired', 'fixed_window', 1)),
      batcher.submit(0, request('bt:live')),
    ]);
    expect(batcher.calls).toBe(1);
    expect(decodeBatchReply(replies[1], 1).expired).toBe(true);
    expect(await client.exists(stateKey('bt:expired', 'fixed_window'))).toBe(0);
    expect(await fixedWindowCount(client, 'bt:live')).toBe(2);
  });
});
