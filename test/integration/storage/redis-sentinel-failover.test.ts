/**
 * Sentinel failover: the master dies, the sentinel promotes its replica, and the store follows to the new
 * master by itself, with the counts that had reached the replica. While it has no master, the store fails
 * fast with a StoreError (never hangs, never crashes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/vocab/errors.js';
import { counterKey } from '../../../src/vocab/keys.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { freePort, rawCommand, RedisProcess, startRedis, startSentinel, type RedisServer, type SentinelSetup } from '../../support/redis.js';

const key = counterKey('rl:failover:', 'd', [{ key: 'k', value: String(process.pid) }], 'sliding_window_log', 3_600_000);
const check = { key, algorithm: 'sliding_window_log' as const, limit: 100, windowMs: 3_600_000, burst: 1, hits: 1, enforce: true };
const T0 = 1_700_000_000_000;

describe('Redis Sentinel failover', () => {
  let master: RedisServer;
  let replica: RedisProcess;
  let sentinel: SentinelSetup;
  let store: RedisStore;
  beforeAll(async () => {
    // replicas sync at once (the default waits 5 s to batch diskless syncs)
    master = await startRedis(['--repl-diskless-sync-delay', '0']);
    replica = new RedisProcess(await freePort(), ['--replicaof', '127.0.0.1', String(master.port)]);
    await replica.start();
    sentinel = await startSentinel(master.port, { downAfterMs: 400 });
    store = createRedisStore({ url: 'redis://', type: 'sentinel', sentinelMaster: sentinel.masterName, sentinels: sentinel.sentinels });
    await store.waitUntilReady(5000);
  });
  afterAll(async () => {
    await store?.close();
    await sentinel?.stop();
    await replica?.destroy();
    await master?.stop();
  });

  it('follows the promoted replica and keeps the replicated counts', async () => {
    for (let i = 0; i < 5; i++) await store.apply([check], T0 + i);
    // make sure the replica has the writes before the master goes
    expect(await rawCommand(master.port, ['WAIT', '1', '4000'], 5000)).toBe(':1\r\n');
    await master.stopRedis();

    const started = Date.now();
    let failures = 0;
    let outcome;
    while (Date.now() - started < 15_000) {
      try {
        [outcome] = await store.apply([check], T0 + 10);
        break;
      } catch (error) {
        expect(error).toBeInstanceOf(StoreError);
        failures++;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    expect(failures).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ allowed: true, remaining: 100 - 6 });
    const role = await rawCommand(replica.port, ['ROLE']);
    expect(role).toContain('master');
  });
});
