/**
 * Deadline benchmark: `ratelimit serve` in its own process with Redis, Envoy-shaped calls with a short gRPC
 * deadline sent open-loop (one every --interval ms, whatever the answers), first with Redis healthy, then
 * with Redis paused (SIGSTOP: connected but silent). Prints, per phase: answers in time, DEADLINE_EXCEEDED
 * at the client, answers counted late by the server, store fallbacks (answers by FAILURE_MODE), and client
 * latency percentiles.
 *
 *   npx tsx bench/deadlines.ts [--calls 1000] [--interval 2] [--deadline 20] [--margin 2]
 *
 * --margin sets DEADLINE_MARGIN_MS (the floor of the measured margin). Starts its own redis-server on a
 * free port (never the one on 6379). Compare figures from one run: the machine is shared.
 */
import * as grpc from '@grpc/grpc-js';
import { rawCommand, startRedis } from '../test/support/redis.js';
import { RlsTestClient } from '../test/support/rls-client.js';
import { startImage } from './lib/servers.js';
import { rulesFolder } from '../test/support/rules-folder.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/deadlines.ts', { calls: 'string', interval: 'string', deadline: 'string', margin: 'string' });
const calls = args.num('calls', 1000);
const intervalMs = args.num('interval', 2);
const deadlineMs = args.num('deadline', 20);
const marginMs = args.num('margin', 2);

const redis = await startRedis();
const redisPid = Number(/process_id:(\d+)/.exec(await rawCommand(redis.port, ['INFO', 'server']))![1]);
const rules = rulesFolder('rl-bench-');
const dir = rules.write({ 'bench.yaml': 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000000000}\n' });
const service = await startImage({
  CONFIG_DIR: dir,
  BACKEND: 'redis',
  REDIS_URL: redis.url,
  FAILURE_MODE: 'open',
  LOCAL_CACHE_SIZE: '0',
  DEADLINE_MARGIN_MS: String(marginMs),
});
const client = new RlsTestClient(service.grpcAddress);

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`http://${service.httpAddress}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'gm'))].reduce((sum, m) => sum + Number(m[1]), 0);
}

async function phase(label: string): Promise<void> {
  const [late0, fallbacks0] = [await metric('ratelimit_grpc_late_answers_total'), await metric('ratelimit_store_fallbacks_total')];
  const latencies: number[] = [];
  const results: Promise<grpc.status>[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    results.push(
      client.shouldRateLimit({ domain: 'bench', descriptors: [{ entries: [{ key: 'user', value: `u${i % 100}` }] }] }, deadlineMs).then(
        () => (latencies.push(performance.now() - started), grpc.status.OK),
        (err: grpc.ServiceError) => err.code,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const codes = await Promise.all(results);
  const inTime = codes.filter((c) => c === grpc.status.OK).length;
  const missed = codes.filter((c) => c === grpc.status.DEADLINE_EXCEEDED).length;
  latencies.sort((a, b) => a - b);
  const p = (q: number) => (latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN).toFixed(1);
  const late = (await metric('ratelimit_grpc_late_answers_total')) - late0;
  const fallbacks = (await metric('ratelimit_store_fallbacks_total')) - fallbacks0;
  console.log(
    `${label.padEnd(14)} in time ${inTime}/${calls} (${((100 * inTime) / calls).toFixed(1)} %), DEADLINE_EXCEEDED ${missed}, ` +
      `server-counted late ${late}, fallbacks ${fallbacks}, latency p50 ${p(0.5)} ms p99 ${p(0.99)} ms`,
  );
}

try {
  for (let i = 0; i < 50; i++) await client.shouldRateLimit({ domain: 'bench', descriptors: [{ entries: [{ key: 'user', value: 'warm' }] }] }, 1000);
  console.log(
    `${calls} calls, one every ${intervalMs} ms, deadline ${deadlineMs} ms, DEADLINE_MARGIN_MS=${marginMs}; load average ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  await phase('Redis healthy');
  process.kill(redisPid, 'SIGSTOP');
  try {
    await phase('Redis paused');
  } finally {
    process.kill(redisPid, 'SIGCONT');
  }
} finally {
  client.close();
  await service.stop();
  await redis.stop();
  rules.remove();
}
