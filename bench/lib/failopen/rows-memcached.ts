/**
 * The fail-open audit's memcached rows (rows.ts): both services count in one memcached, which is restarted or
 * paused while the probe runs.
 */
import type { AuditRow } from './rows.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const MEMCACHED_ROWS: readonly AuditRow[] = [
  {
    id: 'memcached-restart',
    event: 'memcached restarted (5 probe keys while it is down)',
    store: 'memcached',
    async run(ctx) {
      const memcached = ctx.stack.memcached!;
      await ctx.probe.pause();
      await memcached.stop();
      await ctx.probe.burst(5);
      await memcached.start();
      ctx.probe.resume();
      await sleep(1000);
    },
  },
  {
    id: 'memcached-pause',
    event: 'memcached paused 300 ms (SIGSTOP)',
    store: 'memcached',
    async run(ctx) {
      const memcached = ctx.stack.memcached!;
      await memcached.pause();
      await sleep(300);
      memcached.resume();
      await sleep(ctx.quick ? 700 : 2000);
    },
  },
];
