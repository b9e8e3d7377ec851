/**
 * What one auto-pipeline creation costs as ioredis commands are defined: ioredis copies every defined
 * command (defineCommand) into each Pipeline it creates, and auto-pipelining creates one per event-loop
 * turn with traffic. The store used to define one command per key count seen (up to one per possible number
 * of limits in a request); it now defines none (built-in EVALSHA). No server is needed: pipelines are only
 * created, never sent (lazyConnect).
 *
 *   npx tsx bench/redis-pipeline-cost.ts          # 200000 pipeline creations per row
 *   N=50000 npx tsx bench/redis-pipeline-cost.ts
 */
import { Redis } from 'ioredis';
import { loadBatchScript } from '../src/storage/redis/batch-script.js';

const N = Number(process.env.N ?? 200_000);
const lua = loadBatchScript().lua;

function costNs(defined: number): number {
  const client = new Redis({ lazyConnect: true, enableOfflineQueue: false });
  for (let k = 1; k <= defined; k++) client.defineCommand(`ratelimitBatch${k}`, { lua, numberOfKeys: k });
  for (let i = 0; i < 2000; i++) client.pipeline(); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) client.pipeline();
  const ns = Number(process.hrtime.bigint() - start) / N;
  client.disconnect();
  return ns;
}

console.log(`| commands defined | ns per pipeline creation (${N} creations) |`);
console.log('|---|---|');
for (const defined of [0, 1, 10, 50, 200]) console.log(`| ${defined} | ${costNs(defined).toFixed(0)} |`);
