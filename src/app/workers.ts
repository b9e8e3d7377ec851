/**
 * WORKERS=N: N processes serving the same ports (node:cluster: the primary holds the listening sockets and
 * hands each new connection to a worker in turn; Envoy's long-lived HTTP/2 connections spread over the
 * workers). Each worker is a whole service (rules, engine, store, admin server). The Redis store works
 * as is (the counters live in Redis); the memory store would keep one set of counters per worker and
 * admit up to N times each limit, so WORKERS > 1 with BACKEND=memory is refused at start.
 *
 * The primary forwards SIGTERM/SIGINT to the workers (they drain as one process does), exits when they
 * have, and stops the whole service if a worker dies (the orchestrator restarts it; a half-sized service
 * that looks healthy is worse).
 */
import cluster from 'node:cluster';
import type { Settings } from '../settings/settings.js';
import { StartupError } from '../vocab/startup-error.js';

export function checkWorkers(settings: Settings): void {
  if (settings.workers > 1 && settings.backend === 'memory') {
    throw new StartupError(
      `WORKERS=${settings.workers} needs BACKEND=redis: with the memory store every worker would keep its own counters and admit up to ${settings.workers} times each limit; use WORKERS=1 (scale with replicas of one process, each with its own limits) or the Redis store`,
    );
  }
}

/** True in the primary of a WORKERS > 1 service: it has forked the workers and waits for them. */
export function isPrimaryOfWorkers(settings: Settings): boolean {
  return settings.workers > 1 && cluster.isPrimary;
}

/** In the primary: forks the workers, relays stop signals, resolves with the exit code once all are gone. */
export function superviseWorkers(settings: Settings, write: (line: string) => void): Promise<number> {
  let stopping = false;
  let code = 0;
  for (let i = 0; i < settings.workers; i++) cluster.fork();
  const stopAll = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill(signal);
  };
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  process.on('SIGINT', () => stopAll('SIGINT'));
  return new Promise((resolve) => {
    cluster.on('exit', (worker, exitCode, signal) => {
      if (!stopping) {
        write(`worker ${worker.process.pid} exited (${signal ?? exitCode}); stopping the service\n`);
        code = typeof exitCode === 'number' && exitCode !== 0 ? exitCode : 1;
        stopAll('SIGTERM');
      }
      if (Object.keys(cluster.workers ?? {}).length === 0) resolve(code);
    });
  });
}
