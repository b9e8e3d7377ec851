/**
 * Calls through BatchCommands run on Redis in the order they were made, even when Redis's script cache was
 * flushed under them: the calls refused with NOSCRIPT go again as EVAL, and the calls made meanwhile wait for
 * those resends. Without the wait, the first EVAL cached the script again and later calls ran first (a few per
 * 2,000 calls), which on Redis Cluster let two requests spanning two slots be decided in opposite orders on the
 * two nodes, one admission short at a limit. Each call appends its number to a list; the list must come out
 * sorted. The calls go out in bursts over many event-loop turns, so that NOSCRIPT replies and new calls interleave.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { BatchCommands } from '../../../src/storage/redis/batch-script.js';
import { startRedis, type RedisServer } from '../../support/redis.js';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis({ host: '127.0.0.1', port: redis.port, enableAutoPipelining: true });
});
afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

it('runs the calls in the order they were made across a SCRIPT FLUSH', { timeout: 60_000 }, async () => {
  const commands = new BatchCommands(client, { lua: "redis.call('RPUSH', KEYS[1], ARGV[1]); return 1", algorithms: [] });
  const pad = 'x'.repeat(2000); // replies and requests large enough to arrive over several reads
  const outOfOrder: number[] = [];
  for (let round = 0; round < 10; round++) {
    await client.del('order');
    await client.script('FLUSH');
    const calls: Promise<unknown>[] = [];
    let n = 0;
    for (let turn = 0; turn < 40; turn++) {
      for (let i = 0; i < 50; i++) calls.push(commands.callBuffer(1, ['order', String(n++), pad]));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(calls);
    const order = (await client.lrange('order', 0, -1)).map(Number);
    expect(order).toHaveLength(n);
    outOfOrder.push(order.filter((v, i) => i > 0 && v < order[i - 1]!).length);
  }
  expect(outOfOrder).toEqual(new Array<number>(10).fill(0));
});
