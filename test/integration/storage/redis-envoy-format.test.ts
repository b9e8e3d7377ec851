/**
 * The envoy_fixed_window Lua fragment (REDIS_KEY_FORMAT=envoy) on a real redis-server, without the reference
 * binary: the counter is a plain integer, a rejected batch adds nothing, repeated keys in one batch count one
 * after the other, a value that is not a counter is replaced. The shared-counter test against the reference
 * itself is test/e2e/envoy-counters.test.ts.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envoyCounterKey } from '../../../src/vocab/keys.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { startRedisStore, type RedisStoreHandle } from '../../support/redis-stores.js';

const T0 = 1_700_000_040_000; // a minute boundary
const MINUTE = 60_000;
let handle: RedisStoreHandle;
let raw: Redis;
let serial = 0;

function envoyCheck(key: string, limit: number, extra: Partial<LimitCheck> = {}): LimitCheck {
  return { key, keyFormat: 'envoy', algorithm: 'fixed_window', limit, windowMs: MINUTE, burst: limit, hits: 1, enforce: true, ...extra };
}
const freshKey = (): string => envoyCounterKey('', 'edge', [{ key: 'remote_address', value: `${process.pid}-${++serial}` }], T0);

beforeAll(async () => {
  handle = await startRedisStore('single');
  raw = new Redis(handle.options.url, { maxRetriesPerRequest: 1 });
}, 30_000);
afterAll(async () => {
  raw?.disconnect();
  await handle?.store.close();
  await handle?.stop();
});

describe('REDIS_KEY_FORMAT=envoy on Redis', () => {
  it('counts in a plain integer with the unit as expiry, and reads a count the reference wrote', async () => {
    const key = freshKey();
    await raw.set(key, '3'); // the reference has counted 3
    const out = await handle.store.apply([envoyCheck(key, 5, { hits: 2 })], T0 + 1_000);
    expect(out[0]).toEqual({ allowed: true, remaining: 0, resetMs: MINUTE - 1_000 });
    expect(await raw.get(key)).toBe('5');
    expect(await raw.ttl(key)).toBe(60);
    expect((await handle.store.apply([envoyCheck(key, 5)], T0 + 2_000))[0]!.allowed).toBe(false);
    expect(await raw.get(key)).toBe('5'); // our rejection adds nothing
  });

  it('a batch rejected by another limit leaves the counter as it was; repeated keys count one after the other', async () => {
    const key = freshKey();
    const full = freshKey();
    await raw.set(full, '1');
    const rejected = await handle.store.apply([envoyCheck(key, 5), envoyCheck(key, 5), envoyCheck(full, 1)], T0);
    expect(rejected.map((o) => o.allowed)).toEqual([true, true, false]);
    expect(await raw.get(key)).toBeNull();
    const twice = await handle.store.apply([envoyCheck(key, 2), envoyCheck(key, 2), envoyCheck(key, 2, { enforce: false })], T0);
    expect(twice.map((o) => o.allowed)).toEqual([true, true, false]);
    expect(await raw.get(key)).toBe('2');
  });

  it('replaces a value that is not a counter instead of failing', async () => {
    const key = freshKey();
    await raw.set(key, '1700000040000:4'); // a native fixed_window state, say
    const out = await handle.store.apply([envoyCheck(key, 5)], T0);
    expect(out[0]).toMatchObject({ allowed: true, remaining: 4 });
    expect(await raw.get(key)).toBe('1');
  });
});

describe('EXPIRATION_JITTER_MAX_SECONDS on the reference counters', () => {
  let jittered: RedisStoreHandle;
  let rawJ: Redis;
  beforeAll(async () => {
    jittered = await startRedisStore('single', { expiryJitterMaxS: 300 });
    rawJ = new Redis(jittered.options.url, { maxRetriesPerRequest: 1 });
  }, 30_000);
  afterAll(async () => {
    rawJ?.disconnect();
    await jittered?.store.close();
    await jittered?.stop();
  });

  it('expires each counter after its unit plus its own random 0..299 s, as the reference does; native keys keep their window end', async () => {
    const keys = Array.from({ length: 40 }, freshKey);
    for (const key of keys) await jittered.store.apply([envoyCheck(key, 5)], T0);
    const ttls = await Promise.all(keys.map((k) => rawJ.ttl(k)));
    for (const ttl of ttls) expect(ttl, `TTL ${ttl}`).toBeGreaterThanOrEqual(60);
    for (const ttl of ttls) expect(ttl, `TTL ${ttl}`).toBeLessThan(60 + 300);
    // 40 draws from 300 values: all alike has a chance of 300^-39
    expect(new Set(ttls).size).toBeGreaterThan(1);
    const native = `native-${process.pid}-${++serial}`;
    await jittered.store.apply([{ ...envoyCheck(native, 5), keyFormat: undefined }], T0 + 1_000);
    const nativeKeys = await rawJ.keys(`*${native}*`);
    expect(nativeKeys).toHaveLength(1);
    expect(await rawJ.pttl(nativeKeys[0]!)).toBeLessThanOrEqual(MINUTE - 1_000);
  });
});
