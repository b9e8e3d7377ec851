/**
 * CounterStore on Redis (standalone, Sentinel or Cluster), shared by every replica of the service.
 *
 * One request = one call of the batch script (lua/batch.lua), which decides every limit of the request
 * atomically and commits all-or-nothing. Concurrent requests share round trips: ioredis auto-pipelining
 * sends every command issued in the same event-loop turn in one write, and while one pipeline is in
 * flight the next requests queue into the following one.
 *
 * Redis Cluster: a script may only touch keys of one slot, so checks are grouped by slot. One slot (every
 * limit of one descriptor, always) is one exact atomic call. Several slots take two phases: an evaluate-only
 * call per slot, then, when every slot admits, a committing call per slot. A rejected request therefore
 * consumes nothing, except when another replica's hits land between the phases (then a slot may commit
 * while another rejects): exact per limit, best effort across slots.
 */
import { Cluster } from 'ioredis';
import type { Clock } from '../../core/clock.js';
import { systemClock } from '../../core/clock.js';
import { StoreError } from '../../core/errors.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../algorithms/types.js';
import type { ApplyOptions, CounterStore, LimitCheck, LimitOutcome } from '../counter-store.js';
import { throttledLog, type LogFn } from '../throttled-log.js';
import { BatchCommands, loadBatchScript, runBatch, type BatchReply, type BatchScript } from './batch-script.js';
import { closeClient, isClientReady, openClient, waitReady, type RedisClient } from './connection.js';
import { planClient, type RedisConnectionOptions } from './options.js';
import { keySlot } from './slot.js';

export interface RedisStoreStats {
  /** apply() calls with at least one check. */
  readonly requests: number;
  /** Script calls sent (one per request on one node; per slot, or twice per slot across slots, on Cluster). */
  readonly scriptCalls: number;
  /** Pipelines written to Redis: one write and one reply read each, i.e. network round trips. */
  readonly roundTrips: number;
  /** Requests whose checks spanned several Cluster slots (the best-effort case). */
  readonly crossSlotRequests: number;
  /** Requests that failed with a StoreError. */
  readonly failures: number;
}

export interface RedisStoreInit {
  readonly clock?: Clock;
  /** The assembled script; default: loaded from lua/ next to this module. */
  readonly script?: BatchScript;
}

export class RedisStore implements CounterStore {
  readonly kind = 'redis';
  private readonly clock: Clock;
  private readonly cluster: boolean;
  private readonly commands: BatchCommands;
  private counters = { requests: 0, scriptCalls: 0, roundTrips: 0, crossSlotRequests: 0, failures: 0 };

  /** Takes ownership of `client` (closes it on close()). */
  constructor(
    private readonly client: RedisClient,
    init: RedisStoreInit = {},
  ) {
    this.clock = init.clock ?? systemClock;
    this.cluster = client instanceof Cluster;
    this.commands = new BatchCommands(client, init.script ?? loadBatchScript());
    this.countPipelines();
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    if (checks.length === 0) return [];
    this.counters.requests++;
    try {
      return await withDeadline(() => this.decide(checks, nowMs), options?.deadlineMs, this.clock);
    } catch (error) {
      this.counters.failures++;
      throw toStoreError(error);
    }
  }

  isReady(): boolean {
    return isClientReady(this.client);
  }

  /** Resolves once connected; rejects after `timeoutMs` (the client keeps reconnecting). For start-up. */
  waitUntilReady(timeoutMs: number): Promise<void> {
    return waitReady(this.client, timeoutMs);
  }

  stats(): RedisStoreStats {
    return { ...this.counters };
  }

  async close(): Promise<void> {
    await closeClient(this.client);
  }

  private async decide(checks: readonly LimitCheck[], nowMs: number): Promise<LimitOutcome[]> {
    const groups = this.cluster ? groupBySlot(checks) : [checks.map((_, i) => i)];
    if (groups.length === 1) return (await this.call(checks, nowMs, true)).outcomes;

    this.counters.crossSlotRequests++;
    const run = async (commit: boolean): Promise<{ admitted: boolean; outcomes: LimitOutcome[] }> => {
      const replies = await Promise.all(groups.map((g) => this.call(g.map((i) => checks[i]!), nowMs, commit)));
      const outcomes: LimitOutcome[] = new Array<LimitOutcome>(checks.length);
      groups.forEach((g, gi) => g.forEach((checkIndex, k) => (outcomes[checkIndex] = replies[gi]!.outcomes[k]!)));
      return { admitted: replies.every((r) => r.admitted), outcomes };
    };
    const dry = await run(false);
    if (!dry.admitted) return dry.outcomes;
    return (await run(true)).outcomes;
  }

  private call(checks: readonly LimitCheck[], nowMs: number, commit: boolean): Promise<BatchReply> {
    this.counters.scriptCalls++;
    return runBatch(this.commands, checks, nowMs, commit);
  }

  /**
   * Count round trips where they happen: ioredis creates one pipeline per auto-pipelined write (per node
   * on Cluster), so counting `pipeline()` calls on this client counts the writes it sends.
   */
  private countPipelines(): void {
    const client = this.client as unknown as { pipeline: (...args: unknown[]) => unknown };
    const original = client.pipeline.bind(client);
    client.pipeline = (...args: unknown[]) => {
      this.counters.roundTrips++;
      return original(...args);
    };
  }
}

/** Indexes of the checks, grouped by hash slot, in order of first appearance. */
function groupBySlot(checks: readonly LimitCheck[]): number[][] {
  const bySlot = new Map<number, number[]>();
  checks.forEach((c, i) => {
    const slot = keySlot(c.key);
    const group = bySlot.get(slot);
    if (group) group.push(i);
    else bySlot.set(slot, [i]);
  });
  return [...bySlot.values()];
}

/**
 * Start `work` and settle by the absolute deadline, else reject with STORE_TIMEOUT (the late result is
 * dropped, its rejection handled). Past the deadline already, `work` is not started at all.
 */
export function withDeadline<T>(start: () => Promise<T>, deadlineMs: number | undefined, clock: Clock): Promise<T> {
  if (deadlineMs === undefined) return start();
  const left = deadlineMs - clock.nowMs();
  if (left <= 0) return Promise.reject(new StoreError('STORE_TIMEOUT', 'deadline passed before the store was asked'));
  const work = start();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new StoreError('STORE_TIMEOUT', `store did not answer within ${left} ms (request deadline)`));
    }, left);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

function toStoreError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = /timed? ?out/i.test(message) ? 'STORE_TIMEOUT' : 'STORE_UNAVAILABLE';
  return new StoreError(code, `Redis: ${message}`, { cause: error });
}

export interface RedisStoreOptions extends RedisConnectionOptions {
  /** Reports connection problems, at most once per `logIntervalMs` per message. */
  readonly log?: LogFn;
  /** Default 10 000 ms. */
  readonly logIntervalMs?: number;
  readonly clock?: Clock;
  /** Folder of the algorithm fragments (default: lua/algorithms next to the store). */
  readonly algorithmsDir?: string;
  /** Algorithms that must have a Lua fragment, else creation fails (default: every algorithm). */
  readonly requiredAlgorithms?: readonly AlgorithmName[];
}

/**
 * Build a RedisStore from connection options. Throws on bad options or a missing algorithm fragment;
 * does not wait for the connection (use waitUntilReady): the client connects and reconnects by itself.
 */
export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const clock = options.clock ?? systemClock;
  const script = loadBatchScript(options.algorithmsDir === undefined ? {} : { algorithmsDir: options.algorithmsDir });
  const missing = (options.requiredAlgorithms ?? ALGORITHM_NAMES).filter((a) => !script.algorithms.includes(a));
  if (missing.length > 0) throw new Error(`no Lua fragment for algorithm(s): ${missing.join(', ')}`);
  const plan = planClient(options);
  const log = throttledLog({ log: options.log ?? (() => undefined), clock, intervalMs: options.logIntervalMs ?? 10_000 });
  return new RedisStore(openClient(plan, log), { clock, script });
}
