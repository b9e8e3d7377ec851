/**
 * CounterStore on Redis (standalone, Sentinel or Cluster), shared by every replica of the service.
 *
 * One request = one call of the batch script (lua/batch.lua), which decides every limit of the request
 * atomically and commits all-or-nothing. Concurrent requests share round trips: the requests of one
 * event-loop turn go to Redis as one script call (request-batcher.ts), written at once; ioredis's
 * connection carries the calls of the following turns while one is in flight.
 *
 * Redis Cluster: a script may only touch keys of one slot, so checks are grouped by slot. One slot (every
 * limit of one descriptor, always) is one exact atomic call. Several slots take two phases: an evaluate-only
 * call per slot, then, when every slot admits, a committing call per slot. A rejected request therefore
 * consumes nothing, except when another replica's hits land between the phases (then a slot may commit
 * while another rejects): exact per limit, best effort across slots.
 */
import { CALENDAR_WINDOW } from './algorithm-ids.js';
import { Cluster } from 'ioredis';
import type { Clock } from '../../vocab/clock.js';
import { systemClock } from '../../vocab/clock.js';
import { RateLimitError, StoreError } from '../../vocab/errors.js';
import { ALGORITHM_NAMES, type AlgorithmName } from '../../vocab/algorithm-names.js';
import {
  giveBackAlgorithm,
  type ApplyOptions,
  type CounterStore,
  type LimitCheck,
  type LimitOutcome,
  type Refund,
  type StoreHealth,
} from '../counter-store.js';
import { LeaseScripts } from './lease-scripts.js';
import { throttledLog, type LogFn } from '../throttled-log.js';
import { BatchCommands, loadBatchScript, MAX_BATCH_CHECKS, runBatch, type BatchReply, type BatchScript } from './batch-script.js';
import { RequestBatcher } from './request-batcher.js';
import { notAdmitted } from './on-limit-args.js';
import { closeClient, isPermanentText, isTimeoutText, openClient, waitReady, type RedisClient } from './connection.js';
import { planClient, type RedisConnectionOptions } from './options.js';
import { RedisHealth } from './redis-health.js';
import { keySlot } from './slot.js';
import { withDeadline } from '../deadline.js';
import { crossSlotElastic, decideElastic, type SlotCall } from './elastic-cluster.js';

export interface RedisStoreStats {
  /** apply() calls with at least one check. */
  readonly requests: number;
  /** Script calls sent (one per request on one node; per slot, or twice per slot across slots, on Cluster). */
  readonly scriptCalls: number;
  /**
   * Script calls Redis ran: the scriptCalls of one event-loop turn (per slot on Cluster) travel as one call
   * (request-batcher.ts), so under concurrency this is far below scriptCalls.
   */
  readonly scriptBatches: number;
  /** Pipelines written to Redis: one write and one reply read each, i.e. network round trips. */
  readonly roundTrips: number;
  /** Requests whose checks spanned several Cluster slots (the best-effort case). */
  readonly crossSlotRequests: number;
  /** Requests that failed with a StoreError. */
  readonly failures: number;
  /** Script calls Redis refused to run because they arrived after the caller had given up (nothing counted). */
  readonly expiredCalls: number;
  /** Requests counted in Redis although the caller had already given up on them (answered by FAILURE_MODE). */
  readonly lateCommits: number;
}

export interface RedisStoreInit {
  readonly clock?: Clock;
  /** The assembled script; default: loaded from lua/ next to this module. */
  readonly script?: BatchScript;
  /** Key the health probe evaluates (never writes); default `ratelimit-health-probe`. Give it the key prefix. */
  readonly probeKey?: string;
  /** Health tick period (default 1000 ms). */
  readonly healthIntervalMs?: number;
  /** A health probe not answered within this long counts as a timeout (default: the client's command timeout). */
  readonly probeTimeoutMs?: number;
  /** Told (throttle it) while the store cannot decide, naming the cause. */
  readonly logProblem?: LogFn;
  /** The reference's counters (keyFormat 'envoy') expire after their unit plus a random 0 .. this − 1 seconds; default 0. */
  readonly expiryJitterMaxS?: number;
}

export class RedisStore implements CounterStore {
  private giveBackScripts: LeaseScripts | undefined;
  readonly kind = 'redis';
  private readonly clock: Clock;
  private readonly cluster: boolean;
  private readonly batcher: RequestBatcher;
  private readonly expiryJitterMaxS: number;
  private readonly monitor: RedisHealth;
  private counters = { requests: 0, scriptCalls: 0, roundTrips: 0, crossSlotRequests: 0, failures: 0, expiredCalls: 0, lateCommits: 0 };

  /** Takes ownership of `client` (closes it on close()). */
  constructor(
    private readonly client: RedisClient,
    init: RedisStoreInit = {},
  ) {
    this.clock = init.clock ?? systemClock;
    this.cluster = client instanceof Cluster;
    this.expiryJitterMaxS = Math.max(0, Math.floor(init.expiryJitterMaxS ?? 0));
    this.batcher = new RequestBatcher(new BatchCommands(client, init.script ?? loadBatchScript(), () => this.counters.roundTrips++));
    this.countPipelines();
    const probeKey = init.probeKey ?? 'ratelimit-health-probe';
    const probeCheck: LimitCheck = { key: probeKey, algorithm: 'fixed_window', limit: 1, windowMs: 1000, burst: 1, hits: 0, enforce: true };
    this.monitor = new RedisHealth(client, {
      clock: this.clock,
      probe: async () => {
        const probe = () => runBatch(this.batcher, this.slotOf(probeCheck), [probeCheck], this.clock.nowMs(), false);
        const within = init.probeTimeoutMs;
        await withDeadline(probe, within === undefined ? undefined : this.clock.nowMs() + within, this.clock).catch((error: unknown) => {
          // Worded as the client's own timeout, so that health counts it as one (several in a row fail).
          throw error instanceof StoreError && error.code === 'STORE_TIMEOUT'
            ? new StoreError('STORE_TIMEOUT', `health probe timed out after ${within} ms`)
            : error;
        });
      },
      ...(init.healthIntervalMs === undefined ? {} : { intervalMs: init.healthIntervalMs }),
      ...(init.logProblem === undefined ? {} : { logProblem: init.logProblem }),
    });
  }

  async apply(checks: readonly LimitCheck[], nowMs: number, options?: ApplyOptions): Promise<LimitOutcome[]> {
    if (checks.length === 0) return [];
    if (checks.length > MAX_BATCH_CHECKS) {
      // A request this large is the caller's fault, not the store's: no fallback, no health change.
      throw new RateLimitError('INTERNAL', `${checks.length} limits in one request exceed the Redis store's maximum of ${MAX_BATCH_CHECKS}`);
    }
    this.counters.requests++;
    const deadlineMs = options?.deadlineMs;
    const expiresRedisMs = deadlineMs === undefined ? 0 : this.monitor.toRedisMs(deadlineMs);
    let gaveUp = false;
    const work = () =>
      this.decide(checks, nowMs, expiresRedisMs, () => gaveUp).then((result) => {
        if (gaveUp && result.committed) this.counters.lateCommits++;
        return result.outcomes;
      });
    try {
      const outcomes = await withDeadline(work, deadlineMs, this.clock, () => (gaveUp = true));
      this.monitor.recordSuccess();
      return outcomes;
    } catch (error) {
      this.counters.failures++;
      const storeError = toStoreError(error);
      if (storeError.code === 'STORE_TIMEOUT') this.monitor.recordTimeout(storeError);
      else this.monitor.recordFailure(storeError);
      throw storeError;
    }
  }

  /** Connected and deciding: the last real call or probe succeeded. */
  /** Refunds with the lease give-back script (lua/lease/give_back.lua), one call per key, pipelined. */
  async refund(refunds: readonly Refund[], nowMs: number): Promise<void> {
    const scripts = (this.giveBackScripts ??= new LeaseScripts(this.connection));
    await Promise.all(refunds.map((r) => scripts.giveBack({ ...r, algorithm: r.calendar ? CALENDAR_WINDOW : giveBackAlgorithm(r.algorithm) }, nowMs)));
  }

  isReady(): boolean {
    return this.monitor.health().healthy;
  }

  health(): StoreHealth {
    return this.monitor.health();
  }

  /** Probe now and report; for start-up (REDIS_STARTUP) and tests. */
  checkHealth(): Promise<StoreHealth> {
    return this.monitor.check();
  }

  /**
   * Resolves once connected and a script call succeeded; rejects after `timeoutMs` (real time) with the
   * cause, e.g. "WRONGPASS ..." or "NOPERM ..." (the client keeps reconnecting and probing). For start-up.
   */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    try {
      await waitReady(this.client, timeoutMs);
    } catch (err) {
      const cause = err instanceof Error && isPermanentText(err.message) ? err.message : (this.monitor.health().problem ?? 'unknown');
      throw new Error(isPermanentText(cause) ? `Redis refuses: ${cause}` : `Redis not ready after ${timeoutMs} ms: ${cause}`);
    }
    for (;;) {
      const health = await this.monitor.check();
      if (health.healthy) return;
      // A user without the permissions the scripts need stays so: no point in waiting for it.
      if (health.problem !== undefined && isPermanentText(health.problem)) throw new Error(`Redis refuses: ${health.problem}`);
      const left = until - Date.now();
      if (left <= 0) throw new Error(`Redis not ready after ${timeoutMs} ms: ${health.problem ?? 'unknown'}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, left)));
    }
  }

  /** The client, for the lease scripts (src/lease/), which share its connection and its round-trip count. */
  get connection(): RedisClient {
    return this.client;
  }

  stats(): RedisStoreStats {
    return { ...this.counters, scriptBatches: this.batcher.calls };
  }

  async close(): Promise<void> {
    this.monitor.close();
    await closeClient(this.client);
  }

  /**
   * The outcomes, and whether anything was counted (to notice a commit after the caller gave up). Across
   * slots, no commit phase is sent once `gaveUp()`: the caller answered by its failure mode.
   */
  private async decide(
    checks: readonly LimitCheck[],
    nowMs: number,
    expiresRedisMs: number,
    gaveUp: () => boolean,
  ): Promise<{ outcomes: LimitOutcome[]; committed: boolean }> {
    const elastic = this.cluster ? crossSlotElastic(checks) : [];
    if (elastic.length === 0) return this.decideSlots(checks, nowMs, expiresRedisMs, gaveUp);
    // Elastic aggregates in other slots (elastic-cluster.ts): read when needed, added after the client's step.
    const call: SlotCall = async (c, commit) => (await this.call(c, nowMs, commit, expiresRedisMs)).outcomes;
    return decideElastic(checks, elastic, call, (c) => this.decideSlots(c, nowMs, expiresRedisMs, gaveUp));
  }

  private async decideSlots(
    checks: readonly LimitCheck[],
    nowMs: number,
    expiresRedisMs: number,
    gaveUp: () => boolean,
  ): Promise<{ outcomes: LimitOutcome[]; committed: boolean }> {
    const groups = this.cluster ? groupBySlot(checks) : [checks.map((_, i) => i)];
    if (groups.length === 1) {
      const reply = await this.call(checks, nowMs, true, expiresRedisMs);
      return { outcomes: reply.outcomes, committed: reply.admitted };
    }

    this.counters.crossSlotRequests++;
    const run = async (commit: boolean): Promise<{ admitted: boolean; outcomes: LimitOutcome[] }> => {
      const replies = await Promise.all(
        groups.map((g) =>
          this.call(
            g.map((i) => checks[i]!),
            nowMs,
            commit,
            expiresRedisMs,
          ),
        ),
      );
      const outcomes: LimitOutcome[] = new Array<LimitOutcome>(checks.length);
      groups.forEach((g, gi) => g.forEach((checkIndex, k) => (outcomes[checkIndex] = replies[gi]!.outcomes[k]!)));
      const admitted = replies.every((r) => r.admitted);
      // A slot that admitted its part reports its delays and degradations; another slot's veto undoes them.
      return { admitted, outcomes: admitted ? outcomes : outcomes.map(notAdmitted) };
    };
    const dry = await run(false);
    if (!dry.admitted && !gaveUp()) {
      // A rejected request still counts its checks counted whatever the outcome (count_every_hit), per slot.
      const always = groups.map((g) => g.filter((i) => checks[i]!.countOver === 'always' && checks[i]!.hits > 0)).filter((g) => g.length > 0);
      await Promise.all(
        always.map((g) =>
          this.call(
            g.map((i) => checks[i]!),
            nowMs,
            true,
            expiresRedisMs,
          ),
        ),
      );
      return { outcomes: dry.outcomes, committed: always.length > 0 };
    }
    if (!dry.admitted || gaveUp()) return { outcomes: dry.outcomes, committed: false };
    const final = await run(true);
    return { outcomes: final.outcomes, committed: final.admitted };
  }

  /** One script call; an expired one (Redis past the caller's give-up time) rejects with STORE_TIMEOUT. */
  private async call(checks: readonly LimitCheck[], nowMs: number, commit: boolean, expiresRedisMs: number): Promise<BatchReply> {
    this.counters.scriptCalls++;
    const sent = this.expiryJitterMaxS > 0 ? withExpiryJitter(checks, this.expiryJitterMaxS) : checks;
    const reply = await runBatch(this.batcher, this.slotOf(checks[0]!), sent, nowMs, commit, expiresRedisMs);
    if (reply.expired) {
      this.counters.expiredCalls++;
      throw new StoreError('STORE_TIMEOUT', 'the script reached Redis after the request deadline and did nothing');
    }
    return reply;
  }

  /** The batcher's queue of a call: its keys' slot on Cluster (one per call), one queue on one node. */
  private slotOf(first: LimitCheck): number {
    return this.cluster ? keySlot(first.key) : 0;
  }

  /**
   * Count round trips where they happen: the batch calls are written directly (counted by BatchCommands);
   * the other commands (lease scripts, refunds) go through ioredis's auto-pipeline, which creates one pipeline
   * per write (per node on Cluster), so counting `pipeline()` calls on this client counts those writes.
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

function toStoreError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = isTimeoutText(message) ? 'STORE_TIMEOUT' : 'STORE_UNAVAILABLE';
  return new StoreError(code, `Redis: ${message}`, { cause: error });
}

export interface RedisStoreOptions extends RedisConnectionOptions {
  /** The reference's counters (REDIS_KEY_FORMAT=envoy) expire after their unit plus up to this − 1 random seconds. */
  readonly expiryJitterMaxS?: number;
  /** Reports connection problems, at most once per `logIntervalMs` per message. */
  readonly log?: LogFn;
  /** Default 10 000 ms. */
  readonly logIntervalMs?: number;
  readonly clock?: Clock;
  /** Folder of the algorithm fragments (default: lua/algorithms next to the store). */
  readonly algorithmsDir?: string;
  /** Algorithms that must have a Lua fragment, else creation fails (default: every algorithm). */
  readonly requiredAlgorithms?: readonly AlgorithmName[];
  /** A health probe not answered within this long counts as a timeout (default: commandTimeoutMs). */
  readonly probeTimeoutMs?: number;
  /** Key the health probe evaluates (never written); give it the key prefix (ACLs may restrict keys). */
  readonly probeKey?: string;
  /** Reports good news about the connection ("connection ready"), unthrottled; default: `log`. */
  readonly logInfo?: (message: string) => void;
  /** Logs (at error level) while the store cannot decide, at most once per `problemLogIntervalMs` (default 5000). */
  readonly logError?: LogFn;
  readonly problemLogIntervalMs?: number;
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
  const logProblem = options.logError ? throttledLog({ log: options.logError, clock, intervalMs: options.problemLogIntervalMs ?? 5000 }) : undefined;
  return new RedisStore(openClient(plan, log, options.logInfo ?? log), {
    clock,
    script,
    ...(options.probeKey === undefined ? {} : { probeKey: options.probeKey }),
    ...(options.probeTimeoutMs === undefined ? {} : { probeTimeoutMs: options.probeTimeoutMs }),
    ...(logProblem === undefined ? {} : { logProblem }),
    ...(options.expiryJitterMaxS === undefined ? {} : { expiryJitterMaxS: options.expiryJitterMaxS }),
  });
}

/** Each of the reference's counters gets its own random expiry jitter in [0, max) seconds, as the reference draws one per key. */
function withExpiryJitter(checks: readonly LimitCheck[], maxS: number): readonly LimitCheck[] {
  return checks.map((c) => (c.keyFormat === 'envoy' ? { ...c, expiryJitterS: Math.floor(Math.random() * maxS) } : c));
}
