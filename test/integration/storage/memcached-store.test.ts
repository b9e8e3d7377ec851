/**
 * The memcached store on real memcached servers: the items it writes (the reference's layout and values),
 * which server holds a key (CRC-32 modulo the list, as the reference's client picks it), no admission past a
 * limit however many stores count at once, keys memcached cannot hold, expiry, and a give-back of refunds.
 */
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemcachedClient } from '../../../src/storage/memcached/memcached-client.js';
import { MemcachedStore, expiry, legalKey } from '../../../src/storage/memcached/memcached-store.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { counterKey, envoyCounterKey } from '../../../src/vocab/keys.js';
import { memcachedCommand, memcachedGet } from '../../support/memcached.js';
import { startMemcachedStore, type MemcachedStoreHandle } from '../../support/memcached-stores.js';

const HOUR = 3_600_000;
const run = `${process.pid}-${Date.now()}`;

function envoyCheck(value: string, nowMs: number, limit: number, hits = 1): LimitCheck {
  const key = envoyCounterKey('', 'edge', [{ key: 'remote_address', value }], nowMs - (nowMs % HOUR));
  return { key, keyFormat: 'envoy', algorithm: 'fixed_window', limit, windowMs: HOUR, burst: 1, hits, enforce: true };
}

let h: MemcachedStoreHandle;
beforeAll(async () => {
  h = await startMemcachedStore(3);
});
afterAll(async () => {
  await h?.store.close();
  await h?.stop();
});

describe('memcached store', () => {
  it("writes the reference's item: its key, a decimal count, on the server CRC-32 picks", async () => {
    const now = Date.now();
    const c = envoyCheck(`10.0.0.1-${run}`, now, 10, 3);
    expect((await h.store.apply([c], now))[0]).toMatchObject({ allowed: true, remaining: 7 });
    await h.store.apply([{ ...c, hits: 2 }], now);
    const owner = h.servers[crc32(c.key) % 3]!;
    expect(await memcachedGet(owner.port, c.key)).toBe('5');
    for (const other of h.servers.filter((s) => s !== owner)) expect(await memcachedGet(other.port, c.key)).toBeUndefined();
    // a TTL no longer than the rest of the window and a second
    const meta = await memcachedCommand(owner.port, `mg ${c.key} t\r\n`);
    const ttl = Number(/t(-?\d+)/.exec(meta)?.[1]);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(Math.ceil((HOUR - (now % HOUR)) / 1000) + 1);
  });

  it('counts onto an item another client added (the reference adds with the count as text)', async () => {
    const now = Date.now();
    const c = envoyCheck(`10.0.0.2-${run}`, now, 10);
    const owner = h.servers[crc32(c.key) % 3]!;
    expect(await memcachedCommand(owner.port, `add ${c.key} 0 3600 1\r\n4\r\n`)).toBe('STORED\r\n');
    expect((await h.store.apply([c], now))[0]).toMatchObject({ allowed: true, remaining: 5 });
    expect(await memcachedGet(owner.port, c.key)).toBe('5');
  });

  it('admits exactly the limit when many stores count one key at once, and a rejection takes its hits back', async () => {
    const stores = Array.from(
      { length: 4 },
      () =>
        new MemcachedStore({
          client: new MemcachedClient({ servers: h.servers.map((s) => s.address), connectionsPerServer: 2, connectTimeoutMs: 500, replyTimeoutMs: 2000 }),
          keyPrefix: 'rl:',
        }),
    );
    try {
      const now = Date.now();
      const c = envoyCheck(`10.0.0.3-${run}`, now, 25);
      const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => stores[i % 4]!.apply([c], now)));
      expect(outcomes.filter(([o]) => o!.allowed).length).toBe(25);
      const owner = h.servers[crc32(c.key) % 3]!;
      expect(await memcachedGet(owner.port, c.key)).toBe('25');
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('a rejected batch leaves every counter of the batch as it was', async () => {
    const now = Date.now();
    const a = envoyCheck(`10.0.0.4-${run}`, now, 5);
    const b = envoyCheck(`10.0.0.5-${run}`, now, 1);
    expect((await h.store.apply([a, b], now)).map((o) => o.allowed)).toEqual([true, true]);
    const second = await h.store.apply([a, b], now);
    expect(second.map((o) => [o.allowed, o.remaining])).toEqual([
      [true, 4],
      [false, 0],
    ]);
    expect(await memcachedGet(h.servers[crc32(a.key) % 3]!.port, a.key)).toBe('1');
    expect(await memcachedGet(h.servers[crc32(b.key) % 3]!.port, b.key)).toBe('1');
  });

  it('keeps a key memcached cannot hold (spaces, over 250 bytes) under a hash, and still counts it', async () => {
    const now = Date.now();
    for (const value of [`a b ${run}`, 'x'.repeat(300) + run]) {
      const c = envoyCheck(value, now, 2);
      expect(legalKey(c.key)).toBe(false);
      const stored = h.store.itemKey(c, now);
      expect(stored).toMatch(/^rl:#[A-Za-z0-9_-]{43}$/);
      expect((await h.store.apply([c], now)).map((o) => o.allowed)).toEqual([true]);
      expect((await h.store.apply([c], now)).map((o) => o.allowed)).toEqual([true]);
      expect((await h.store.apply([c], now)).map((o) => o.allowed)).toEqual([false]);
    }
  });

  it('gives refunded units back in the current window (native keys; the reference has no refunds)', async () => {
    const now = Date.now();
    const key = counterKey('rl:', 'edge', [{ key: 'user', value: run }], 'fixed_window', HOUR);
    const c: LimitCheck = { key, algorithm: 'fixed_window', limit: 3, windowMs: HOUR, burst: 1, hits: 3, enforce: true };
    await h.store.apply([c], now);
    await h.store.refund([{ key, algorithm: 'fixed_window', limit: 3, windowMs: HOUR, units: 2, windowStart: now - (now % HOUR) }], now);
    expect((await h.store.apply([{ ...c, hits: 1 }], now))[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect(h.store.itemKey(c, now)).toBe(`${key}:${now - (now % HOUR)}`);
  });

  it('expires an item at its window end: seconds within 30 days, a Unix time beyond (as memcached reads it)', () => {
    const now = 1_800_000_000_500;
    expect(expiry(60_000, now)).toBe(Math.ceil((60_000 - (now % 60_000)) / 1000) + 1);
    const year = 365 * 24 * HOUR;
    expect(expiry(year, now)).toBe(Math.ceil((now - (now % year) + year) / 1000) + 1);
  });
});
