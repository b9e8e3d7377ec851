/**
 * The quota-share sync (rlqs/sync.ts) on a real redis-server: at rest it asks Redis nothing, but not before a
 * first read has marked where the signals are; a Redis that does not answer at start is asked again until it
 * does (otherwise the first read, made when a bucket is tracked, would skip the signals written meanwhile).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { QuotaBook } from '../../../src/rlqs/book.js';
import { redisShareExchange } from '../../../src/rlqs/shared.js';
import { startShareSync } from '../../../src/rlqs/sync.js';
import { eventually } from '../../support/eventually.js';
import { rawCommand, startRedis, type RedisServer } from '../../support/redis.js';

let redis: RedisServer;
beforeAll(async () => void (redis = await startRedis()));
afterAll(async () => await redis.stop());

const calls = async (command: string) => Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await rawCommand(redis.port, ['INFO', 'commandstats']))?.[1] ?? 0);

it('a Redis away at start is asked until it answers once, then nothing while no bucket is tracked', async () => {
  await redis.stopRedis();
  const client = new Redis({ host: '127.0.0.1', port: redis.port, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 20, lazyConnect: false });
  client.on('error', () => undefined);
  const book = new QuotaBook({ nowMs: () => performance.now(), ttlS: 30, idleAbandonMs: 120_000, maxBuckets: 10, maxBucketsPerStream: 10, rule: () => ({ kind: 'allow' }), observer: { report: () => undefined, assignments: () => undefined, reported: () => undefined, wouldDeny: () => undefined, folded: () => undefined } });
  const sync = startShareSync(book, redisShareExchange({ client, keyPrefix: 'sync:' }), 50);
  try {
    await new Promise((r) => setTimeout(r, 200)); // ticks that find no Redis
    await redis.restart();
    // the marking read (XREVRANGE) comes once Redis answers, though no bucket is tracked
    await eventually(async () => (await calls('xrevrange')) >= 1, { timeoutMs: 5000, what: 'the first read of the signals' });
    const after = (await calls('xrevrange')) + (await calls('xread'));
    await new Promise((r) => setTimeout(r, 300)); // six ticks at rest
    expect((await calls('xrevrange')) + (await calls('xread'))).toBe(after);
  } finally {
    sync.stop();
    client.disconnect();
  }
});
