/**
 * Quota books as the service runs them, on an injected clock, for the fair-share tests: one book in memory,
 * or two replicas sharing every bucket through a real redis-server (the exchange and the sync round of
 * src/rlqs/, driven by the test instead of a timer). Each stream keeps the last assignment it was told per
 * bucket (answers and pushes).
 */
import { Redis } from 'ioredis';
import { QuotaBook, type BucketRule, type Subscriber } from '../../src/rlqs/book.js';
import { redisShareExchange, type ShareExchange } from '../../src/rlqs/shared.js';
import { syncOnce } from '../../src/rlqs/sync.js';
import type { Assignment, BucketAction, BucketUsage } from '../../src/rlqs/rlqs-codec.js';

export type Entries = BucketUsage['entries'];
export const ALL: Entries = [{ key: 'name', value: 'all' }];
export const tenant = (name: string): Entries => [{ key: 'tenant', value: name }];

/** {name: all} 20/s, {tenant: *} 5/s. */
const rule = (entries: Entries): BucketRule =>
  entries[0]!.key === 'tenant'
    ? { kind: 'limit', name: 'd.tenant', perFill: 5, fillS: 1, shadow: false }
    : { kind: 'limit', name: 'd.name_all', perFill: 20, fillS: 1, shadow: false };

export interface QuotaStreamSim {
  readonly id: string;
  readonly replica: number;
  readonly sub: Subscriber;
  /** The last assignment per bucket (JSON of its entries). */
  readonly told: Map<string, Assignment>;
}

/** Tokens per fill of the last assignment, 0 for DENY_ALL, undefined when none. */
export function tokensOf(s: QuotaStreamSim, entries: Entries = ALL): number | string | undefined {
  const a = s.told.get(JSON.stringify(entries));
  return a === undefined ? undefined : a.kind === 'token_bucket' ? a.tokensPerFill : a.kind === 'deny_all' ? 0 : a.kind;
}

export interface Replicas {
  readonly mode: 'memory' | 'redis';
  readonly books: QuotaBook[];
  now(): number;
  advance(ms: number): void;
  /** A stream from an address of its own, or from `connection` (`address:port`; one address is one client). */
  open(replica: number, id: string, connection?: string): QuotaStreamSim;
  report(s: QuotaStreamSim, usages: readonly { entries: Entries; allowed: number }[]): Promise<void>;
  close(s: QuotaStreamSim): Promise<void>;
  /** One sync round on every replica (what each does once a second). */
  sync(): Promise<void>;
  /** The fields of a bucket's hash in Redis (empty in memory). */
  stored(entries: Entries): Promise<string[]>;
  stop(): void;
}

let setUps = 0;

/** Each set-up keeps its keys under a prefix of its own (one redis-server serves every test of a file). */
export async function quotaReplicas(
  mode: 'memory' | 'redis',
  redisPort: number | undefined,
  bounds: { maxBuckets?: number; maxBucketsPerStream?: number } = {},
): Promise<Replicas> {
  let now = 1_000_000;
  const prefix = `fair${setUps++}:`;
  const clients: Redis[] = [];
  const exchanges: ShareExchange[] = [];
  const books: QuotaBook[] = [];
  const streams = new Map<Subscriber, QuotaStreamSim>();
  let opened = 0;
  const record = (s: QuotaStreamSim | undefined, actions: readonly BucketAction[]) => {
    for (const a of actions) s?.told.set(JSON.stringify(a.entries), a.assignment);
  };
  for (let i = 0; i < (mode === 'redis' ? 2 : 1); i++) {
    let exchange: ShareExchange | undefined;
    if (mode === 'redis') {
      const client = new Redis({ host: '127.0.0.1', port: redisPort!, lazyConnect: false, maxRetriesPerRequest: 1 });
      clients.push(client);
      exchange = redisShareExchange({ client, keyPrefix: prefix, replicaId: `replica${i}`, nowMs: () => now, readTimeoutMs: 2000 });
      exchanges.push(exchange);
    }
    books.push(
      new QuotaBook({
        nowMs: () => now,
        ttlS: 30,
        idleAbandonMs: 120_000,
        maxBuckets: bounds.maxBuckets ?? 50_000,
        maxBucketsPerStream: bounds.maxBucketsPerStream ?? 5_000,
        rule: (_d, entries) => rule(entries),
        ...(exchange === undefined ? {} : { exchange }),
      }),
    );
  }
  // Every write of a replica has reached Redis (one connection keeps the order of its commands).
  const flush = async () => void (await Promise.all(clients.map((c) => c.ping())));
  const sync = async () => {
    for (let i = 0; i < exchanges.length; i++) {
      await syncOnce(books[i]!, exchanges[i]!);
      await flush();
    }
  };
  await sync(); // the first round marks where the signals are
  return {
    mode,
    books,
    now: () => now,
    advance: (ms) => void (now += ms),
    open(replica, id, connection = `10.0.${Math.floor(opened / 200)}.${(opened++ % 200) + 1}:5000`) {
      const told = new Map<string, Assignment>();
      const sim: QuotaStreamSim = { id, replica, told, sub: books[replica]!.open(`${id}@${connection}`, (actions) => record(sim, actions)) };
      streams.set(sim.sub, sim);
      return sim;
    },
    async report(s, usages) {
      const answer = await books[s.replica]!.answer(s.sub, {
        domain: 'd',
        usages: usages.map((u) => ({ entries: u.entries, allowed: u.allowed, denied: 0, elapsedS: 0 })),
      });
      record(s, answer);
      await flush();
    },
    async close(s) {
      books[s.replica]!.close(s.sub);
      streams.delete(s.sub);
      await flush();
    },
    sync,
    async stored(entries) {
      if (clients.length === 0) return [];
      return Object.keys(await clients[0]!.hgetall(`${prefix}rlqs:${JSON.stringify(['d', entries.map((e) => [e.key, e.value])])}`));
    },
    stop: () => clients.forEach((c) => c.disconnect()),
  };
}
