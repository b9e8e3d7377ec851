/**
 * The capacity service on BACKEND=redis for bench/capacity.ts: a fresh redis-server and one or more of our
 * services on it (replicas sharing one state), with the pids whose CPU is measured: the services' and Redis's.
 */
import { rawCommand, startRedis } from '../../test/support/redis.js';
import { startOurs } from './servers.js';

export interface CapacityRedisTarget {
  readonly addresses: string[];
  readonly pids: (number | undefined)[];
  readonly redisPid: number;
  stop(): Promise<void>;
}

export async function startCapacityOnRedis(replicas: number, env: Record<string, string>): Promise<CapacityRedisTarget> {
  const redis = await startRedis();
  const started: Awaited<ReturnType<typeof startOurs>>[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(started.map((s) => s.stop()));
    await redis.stop();
  };
  try {
    for (let i = 0; i < replicas; i++) started.push(await startOurs(`redis-${i}`, { ...env, BACKEND: 'redis', REDIS_URL: redis.url }));
    const redisPid = Number(/process_id:(\d+)/.exec(await rawCommand(redis.port, ['INFO', 'server']))?.[1]);
    return { addresses: started.map((s) => s.address), pids: started.map((s) => s.pid), redisPid, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
