/**
 * One check of a batch with its throttling fields (ban, elastic), in TypeScript: what the memory store does,
 * and the model the Lua half (src/storage/redis/lua/throttling/step.lua) is checked against on random traces
 * (test/integration/storage/throttling-conformance.test.ts). Soft limits and criticality shares need nothing
 * here: the engine passes their admission ceiling as the check's `limit`/`burst` (throttling/plan.ts).
 *
 * Order, identical in Lua:
 * 1. ban: a live ban (stored end > now) rejects at once: remaining 0, resetMs = end − now; nothing else is read.
 * 2. the algorithm at `limit` (own). Allowed → admitted.
 * 3. elastic, when own rejects: the algorithm at `max`; if that admits, the aggregate (its own algorithm,
 *    elastic.algorithm, default the check's) at the largest limit gives use = maxLimit − remaining; admitted (borrowed) iff use + hits <= capacity. Borrowed: remaining 0
 *    (the client is above its own limit), resetMs from the evaluation at `max`.
 *    With use 'ask' (Redis Cluster, the aggregate in another slot, not read yet): instead of borrowing, the
 *    check is rejected with needsAggregate, which vetoes the batch whatever `enforce` says (nothing is
 *    written, no ban starts); the caller reads the aggregate and asks again with the number.
 * 4. elastic, when admitted with hits > 0: the aggregate counts the hits too (its evaluation at the largest
 *    limit; not when `use` was given).
 * 5. ban, when finally rejected, enforced and hits > 0: a ban until now + ms starts; resetMs = max(resetMs, ms).
 * A check with `countOver` writes its own state (counted past the limit) even when rejected; the batch decides
 * whether it is kept (counter-store.ts LimitCheck.countOver).
 */
import { getAlgorithm } from '../algorithms/registry.js';
import { PARAM_BOUNDS } from '../vocab/algorithm-names.js';
import type { AlgorithmOutcome, Evaluation } from '../algorithms/types.js';
import type { LimitCheck } from './counter-store.js';
import { algorithmParams } from './on-limit-batch.js';

/** The limit the aggregate is read at: far above any capacity, so its evaluation always counts. */
export const AGGREGATE_LIMIT = PARAM_BOUNDS.maxLimit;

/** A ban's state: the fixed_window shape (so the memory store keeps it without a codec of its own), start = the ban's end. */
export interface BanState {
  readonly start: number;
  readonly count: number;
}

export interface StepWrite {
  readonly key: string;
  readonly state: unknown;
  readonly ttlMs: number;
  /** The check whose algorithm the state belongs to (the store's codec). */
  readonly check: LimitCheck;
}

export interface StepResult {
  readonly outcome: AlgorithmOutcome;
  /** States to write when the batch is admitted (the check's own first, then the aggregate). */
  readonly writes: readonly StepWrite[];
  /** A ban to write whatever the batch's fate. */
  readonly banWrite?: StepWrite;
  readonly borrowed: boolean;
  readonly ban?: 'active' | 'started';
  /** Borrowing was possible but the aggregate's use was 'ask': decide again with it (vetoes the batch). */
  readonly needsAggregate?: boolean;
}

/** The pseudo-check a ban key is stored under. */
export function banCheck(key: string): LimitCheck {
  return { key, algorithm: 'fixed_window', limit: 0, windowMs: 1, burst: 1, hits: 0, enforce: false };
}

function aggregateCheck(check: LimitCheck, key: string): LimitCheck {
  return { ...check, key, algorithm: check.elastic?.algorithm ?? check.algorithm, limit: AGGREGATE_LIMIT, enforce: false, elastic: undefined, ban: undefined };
}

/** `read(key, check)`: the state under key as the batch stands (earlier writes of the batch included). */
export function evaluateCheck(check: LimitCheck, nowMs: number, read: (key: string, check: LimitCheck) => unknown): StepResult {
  if (check.ban !== undefined) {
    const ban = read(check.ban.key, banCheck(check.ban.key)) as BanState | undefined;
    if (ban !== undefined && ban.start > nowMs) {
      return {
        outcome: { allowed: false, remainingIfCommitted: 0, remainingIfNotCommitted: 0, resetMs: ban.start - nowMs },
        writes: [],
        borrowed: false,
        ban: 'active',
      };
    }
  }
  const algorithm = getAlgorithm(check.algorithm);
  const params = algorithmParams(check); // with its on_limit delay (token_bucket / leaky_bucket)
  const state = read(check.key, check);
  const own = algorithm.evaluate(state, nowMs, params, check.hits);
  let outcome = own.outcome;
  let chosen: Evaluation<unknown> = own;
  let borrowed = false;
  let aggregate: Evaluation<unknown> | undefined;
  const elastic = check.elastic;
  const aggregateOf = (): Evaluation<unknown> | undefined =>
    elastic === undefined || elastic.use !== undefined
      ? undefined
      : getAlgorithm(elastic.algorithm ?? check.algorithm).evaluate(
          read(elastic.key, aggregateCheck(check, elastic.key)),
          nowMs,
          { ...params, limit: AGGREGATE_LIMIT },
          check.hits,
        );
  if (elastic !== undefined && !own.outcome.allowed) {
    const atMax = algorithm.evaluate(state, nowMs, { ...params, limit: elastic.max }, check.hits);
    if (atMax.outcome.allowed && elastic.use === 'ask') return { outcome, writes: [], borrowed: false, needsAggregate: true };
    if (atMax.outcome.allowed) {
      aggregate = aggregateOf();
      const use = aggregate === undefined ? (elastic.use as number) : AGGREGATE_LIMIT - aggregate.outcome.remainingIfNotCommitted;
      if (use + check.hits <= elastic.capacity) {
        borrowed = true;
        chosen = atMax;
        outcome = { allowed: true, remainingIfCommitted: 0, remainingIfNotCommitted: own.outcome.remainingIfNotCommitted, resetMs: atMax.outcome.resetMs };
      }
    }
  }
  const writes: StepWrite[] = [];
  if ((outcome.allowed || check.countOver !== undefined) && check.hits > 0) {
    writes.push({ key: check.key, state: chosen.next, ttlMs: chosen.ttlMs, check });
    if (elastic !== undefined && outcome.allowed) {
      aggregate ??= aggregateOf();
      if (aggregate !== undefined && aggregate.outcome.allowed) {
        writes.push({ key: elastic.key, state: aggregate.next, ttlMs: aggregate.ttlMs, check: aggregateCheck(check, elastic.key) });
      }
    }
  }
  if (!outcome.allowed && check.ban !== undefined && check.enforce && check.hits > 0) {
    const { key, ms } = check.ban;
    const state: BanState = { start: nowMs + ms, count: 0 };
    return {
      outcome: { ...outcome, resetMs: Math.max(outcome.resetMs, ms) },
      writes,
      banWrite: { key, state, ttlMs: ms, check: banCheck(key) },
      borrowed,
      ban: 'started',
    };
  }
  return { outcome, writes, borrowed };
}
