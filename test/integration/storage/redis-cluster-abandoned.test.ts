/**
 * A cross-slot request on Redis Cluster runs in two phases (evaluate, then commit). When the caller gives up
 * during the first phase (it answers by its failure mode), the second must not be sent: without Redis's
 * clock (an ACL user without +time, so calls carry no expiry) it would count a request that was answered
 * otherwise. Every node is paused (CLIENT PAUSE ALL) while the first phase is in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import type { LimitCheck } from '../../../src/storage/counter-store.js';
import { createRedisStore, type RedisStore } from '../../../src/storage/redis/redis-store.js';
import { rawCommand, startCluster, type ClusterSetup } from '../../support/redis.js';

const clock = new FakeClock(1_700_000_000_000);
const check = (tag: string, hits: number): LimitCheck => ({
  key: `ca:{${tag}}:fixed_window:60000`,
  algorithm: 'fixed_window',
  limit: 100,
  windowMs: 60_000,
  burst: 1,
  hits,
  enforce: true,
});

let cluster: ClusterSetup;
let store: RedisStore;
beforeAll(async () => {
  cluster = await startCluster();
  for (const node of cluster.nodes) {
    await rawCommand(node.port, ['ACL', 'SETUSER', 'notime', 'on', '>pw', '~*', '+@all', '-time']);
  }
  const first = cluster.nodes[0]!;
  store = createRedisStore({
    url: `redis://notime:pw@${first.host}:${first.port}`,
    type: 'cluster',
    clusterNodes: cluster.nodes,
    clock,
    commandTimeoutMs: 5000,
  });
  await store.waitUntilReady(10_000);
}, 60_000);
afterAll(async () => {
  await store?.close();
  await cluster?.stop();
});

describe('abandoned cross-slot calls on Redis Cluster', () => {
  it('sends no commit phase once the caller gave up during the evaluate phase', async () => {
    const request = [check('a', 1), check('b', 1)];
    const before = store.stats().scriptCalls;
    for (const node of cluster.nodes) expect(await rawCommand(node.port, ['CLIENT', 'PAUSE', '500', 'ALL'])).toBe('+OK\r\n');
    await expect(store.apply(request, clock.nowMs(), { deadlineMs: clock.nowMs() + 100 })).rejects.toMatchObject({ code: 'STORE_TIMEOUT' });
    // One slot each, so one call each. The first reads wait behind the paused evaluate calls (a commit phase
    // would be sent as their replies arrive, before these reads' replies); the second reads come after it.
    const read = () => Promise.all(['a', 'b'].map(async (tag) => (await store.apply([check(tag, 0)], clock.nowMs()))[0]!.remaining));
    await read();
    expect(await read()).toEqual([100, 100]);
    expect(store.stats().lateCommits).toBe(0);
    expect(store.stats().scriptCalls - before).toBe(2 + 2 + 2); // the abandoned evaluate phase, then the reads
  }, 20_000);
});
