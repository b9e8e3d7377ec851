/**
 * Open the ioredis client for a plan (standalone, Sentinel or Cluster) so that it never takes the process
 * down: every error event is listened to and logged through a throttled log, and reconnects run forever.
 */
import { Cluster, Redis } from 'ioredis';
import type { ClientPlan } from './options.js';
import type { LogFn } from '../throttled-log.js';

export type RedisClient = Redis | Cluster;

/** `info`: where good news goes ("connection ready" is not a problem, so not at `log`'s warn level). */
export function openClient(plan: ClientPlan, log: LogFn, info: (message: string) => void = log): RedisClient {
  const client: RedisClient = plan.type === 'cluster' ? new Cluster(plan.nodes, plan.options) : new Redis(plan.options);
  const where = plan.type === 'cluster' ? 'Redis Cluster' : plan.type === 'sentinel' ? 'Redis (Sentinel)' : 'Redis';
  // Without an 'error' listener an EventEmitter error would be thrown and crash the process.
  client.on('error', (error: unknown) => log(`${where} connection error: ${describe(error)}`, error));
  if (client instanceof Cluster) {
    client.on('node error', (error: unknown, node: string) => log(`Redis Cluster node ${node} error: ${describe(error)}`, error));
  }
  client.on('ready', () => info(`${where} connection ready`));
  return client;
}

export function isClientReady(client: RedisClient): boolean {
  return client.status === 'ready';
}

/**
 * Resolve when the client is ready; reject after `timeoutMs` (the client keeps trying in the background), or at
 * once on an error that waiting cannot cure (isPermanentText: a wrong password, a missing ACL permission).
 */
export function waitReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (isClientReady(client)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('error', onError);
    };
    const onReady = (): void => {
      done();
      resolve();
    };
    const onError = (error: unknown): void => {
      if (!isPermanentText(describe(error))) return;
      done();
      reject(new Error(describe(error)));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`Redis not ready after ${timeoutMs} ms`));
    }, timeoutMs);
    client.once('ready', onReady);
    client.on('error', onError);
  });
}

/**
 * Whether an error's text says Redis refuses these credentials or this user (WRONGPASS, NOAUTH, NOPERM, an AUTH
 * sent to a server without a password): reconnecting will not change it until someone changes a setting, so
 * start-up does not wait it out.
 */
export function isPermanentText(text: string): boolean {
  return /\b(WRONGPASS|NOAUTH|NOPERM)\b|ERR AUTH\b|invalid (username-)?password/i.test(text);
}

/** Close gracefully (QUIT) when connected, else drop the connection; never rejects. */
export async function closeClient(client: RedisClient): Promise<void> {
  try {
    if (isClientReady(client)) await client.quit();
  } catch {
    // already gone
  } finally {
    client.disconnect();
  }
}

/**
 * An ioredis/Redis error as one line for logs and health: the errno code first when the message lacks it,
 * without the "Redis: " prefix toStoreError (redis-store.ts) adds.
 */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = error.message.startsWith('Redis: ') ? error.message.slice('Redis: '.length) : error.message;
    return code && !message.includes(code) ? `${code} ${message}` : message;
  }
  return String(error);
}

/** Whether an error's text says it timed out (ioredis "Command timed out", our "...within N ms" timeouts). */
export function isTimeoutText(text: string): boolean {
  return /timed? ?out/i.test(text);
}
