/**
 * The Redis store's health is the truth about its decisions, not about its socket: against a real
 * redis-server, an ACL user that may not run scripts, a script that fails, a wrong password and a restart
 * each show in health() / isReady() with the cause, and recovery shows within a probe tick. SCRIPT FLUSH is
 * not a failure (EVALSHA falls back to EVAL).
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { createRedisStore, type RedisStore, type RedisStoreOptions } from '../../../src/storage/redis/redis-store.js';
import { eventually } from '../../support/eventually.js';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';

const NOW = 1_700_000_000_000;
const check = (key: string): LimitCheck => ({ key, algorithm: 'fixed_window', limit: 5, windowMs: 60_000, burst: 1, hits: 1, enforce: true });

let redis: RedisServer;
const stores: RedisStore[] = [];
function open(url: string, extra: Partial<RedisStoreOptions> = {}): RedisStore {
  const store = createRedisStore({ url, ...extra });
  stores.push(store);
  return store;
}

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await redis.stop();
});

describe('Redis store health', () => {
  it('is not healthy while its ACL user may not run scripts (NOPERM), and recovers when allowed', async () => {
    await rawCommand(redis.port, ['ACL', 'SETUSER', 'noscript', 'on', '>pw', '~*', '+@all', '-eval', '-evalsha', '-eval_ro', '-evalsha_ro']);
    const store = open(`redis://noscript:pw@127.0.0.1:${redis.port}`);
    await expect(store.waitUntilReady(1500)).rejects.toThrow(/NOPERM/);
    expect(store.isReady()).toBe(false);
    expect(store.health()).toMatchObject({ connected: true, healthy: false, problem: expect.stringMatching(/NOPERM/) as unknown });
    await expect(store.apply([check('h:{noperm}')], NOW)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });

    await rawCommand(redis.port, ['ACL', 'SETUSER', 'noscript', '+eval', '+evalsha']);
    await eventually(async () => (await store.checkHealth()).healthy, { what: 'healthy after the grant', timeoutMs: 5000, intervalMs: 50 });
    expect((await store.apply([check('h:{noperm}')], NOW))[0]!.remaining).toBe(4);
  });

  it('is not healthy while the script fails, naming the Redis error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-broken-lua-'));
    try {
      cpSync(fileURLToPath(new URL('../../../src/storage/redis/lua/algorithms/', import.meta.url)), dir, { recursive: true });
      writeFileSync(join(dir, 'fixed_window.lua'), "ALGORITHMS['fixed_window'] = function() error('fragment broken on purpose') end\n");
      const store = open(redis.url, { algorithmsDir: dir });
      await expect(store.waitUntilReady(1500)).rejects.toThrow(/fragment broken on purpose/);
      expect(store.health()).toMatchObject({ connected: true, healthy: false });
      expect(store.isReady()).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a wrong password as the cause, not as a healthy store', async () => {
    const locked = await startRedis();
    try {
      await rawCommand(locked.port, ['CONFIG', 'SET', 'requirepass', 'secret']);
      const wrong = open(`redis://:nope@127.0.0.1:${locked.port}`);
      await expect(wrong.waitUntilReady(1000)).rejects.toThrow(/WRONGPASS/);
      expect(wrong.health()).toMatchObject({ connected: false, healthy: false, problem: expect.stringMatching(/WRONGPASS/) as unknown });
      const none = open(`redis://127.0.0.1:${locked.port}`);
      await expect(none.waitUntilReady(1000)).rejects.toThrow(/NOAUTH/);
      await wrong.close();
      await none.close();
    } finally {
      await locked.stop();
    }
  });

  it('stays healthy across SCRIPT FLUSH (EVAL reloads the script) and recovers after a restart', async () => {
    const store = open(redis.url);
    await store.waitUntilReady(2000);
    await rawCommand(redis.port, ['SCRIPT', 'FLUSH']);
    expect((await store.apply([check('h:{flush}')], NOW))[0]!.remaining).toBe(4);
    expect(store.isReady()).toBe(true);

    await redis.stopRedis();
    await eventually(async () => !(await store.checkHealth()).healthy, { what: 'unhealthy while stopped', timeoutMs: 5000, intervalMs: 50 });
    expect(store.health().problem).toMatch(/not connected/);
    await redis.restart();
    await eventually(async () => (await store.checkHealth()).healthy, { what: 'healthy after restart', timeoutMs: 10_000, intervalMs: 100 });
    expect((await store.apply([check('h:{flush}')], NOW))[0]!.remaining).toBe(4); // a restarted Redis is empty
  }, 20_000);
});
