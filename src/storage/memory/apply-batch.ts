/**
 * The batch contract of CounterStore (storage/counter-store.ts) over any synchronous key → state access,
 * shared by the memory store, the local fallback and tests:
 *
 * 1. evaluate every check at `nowMs` against the current state;
 * 2. the batch is admitted iff every check with `enforce` is allowed;
 * 3. only then write the next state of each allowed check with hits > 0 (and of each check whose countOver
 *    counts it past its limit);
 * 4. a rejected batch writes nothing, but for its countOver 'always' checks (countAlways). `remaining` is the quota after the commit when the check was
 *    committed, else the quota as the state stands.
 *
 * Several checks on the same key in one batch (a descriptor sent twice) count one after the other: a later
 * check is evaluated on the state an earlier allowed check of the batch would leave, and the last such state
 * is written. So two checks of 1 hit on a key with 1 left allow the first and reject the second.
 */
import { getAlgorithm } from '../../algorithms/registry.js';
import type { AlgorithmOutcome } from '../../algorithms/types.js';
import { evaluateCheck, type StepResult, type StepWrite } from '../throttling-step.js';
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { algorithmParams, degradeCheck, trackBackoff, withOnLimit } from '../on-limit-batch.js';

/**
 * Read and write access to stored algorithm states; `write` is called only for an admitted batch.
 * `exhausted` tells the store the key has no quota left (remaining 0) after this commit; `rejected` is
 * called for a check that was not allowed while its stored key has no quota left at all. A store may
 * protect such keys from eviction (see memory-store.ts).
 */
export interface StateAccess {
  read(key: string, check: LimitCheck): unknown;
  write(key: string, state: unknown, ttlMs: number, check: LimitCheck, exhausted: boolean): void;
  rejected?(key: string): void;
}

interface Pending {
  readonly state: unknown;
  readonly ttlMs: number;
  readonly check: LimitCheck;
  readonly exhausted: boolean;
}

export function applyBatch(access: StateAccess, checks: readonly LimitCheck[], nowMs: number): LimitOutcome[] {
  const pending = new Map<string, Pending>();
  // Bans (throttling) are written whatever the batch's fate, and later checks of the batch see them.
  const bans = new Map<string, StepWrite>();
  const read = (key: string, check: LimitCheck): unknown => {
    const p = pending.get(key) ?? bans.get(key);
    return p !== undefined ? p.state : access.read(key, check);
  };
  const steps: StepResult[] = [];
  /** Checks admitted as degraded (on_limit); undefined while no check of the batch has an on_limit. */
  let degraded: boolean[] | undefined;
  let admitted = true;
  checks.forEach((check, i) => {
    const earlier = pending.get(check.key);
    let step = evaluateCheck(check, nowMs, read);
    if (check.onLimit !== undefined) {
      // on_limit degrade (on-limit-batch.ts): a rejected check admitted anyway, counted under its degrade key.
      // (Config refuses degrade together with ban or elastic, so the step has neither here.)
      degraded ??= [];
      const degrade = degradeCheck(check, step.outcome, nowMs, read);
      degraded[i] = degrade !== undefined;
      if (degrade !== undefined) step = { ...step, outcome: degrade.outcome, writes: degrade.write === undefined ? [] : [degrade.write] };
    }
    const outcome = step.outcome;
    steps.push(step);
    if (!outcome.allowed && (check.enforce || step.needsAggregate === true)) admitted = false;
    for (const w of step.writes) {
      pending.set(w.key, {
        state: w.state,
        ttlMs: w.ttlMs,
        check: w.check,
        exhausted: w.key === check.key && (!outcome.allowed || outcome.remainingIfCommitted === 0),
      });
    }
    if (step.banWrite !== undefined) bans.set(step.banWrite.key, step.banWrite);
    if (!outcome.allowed && outcome.remainingIfNotCommitted === 0 && earlier === undefined && step.ban === undefined) {
      // Only a check decided on the stored state says the stored key has nothing left (a repeated key is
      // decided on what its earlier checks would leave, which a rejected batch never writes).
      access.rejected?.(check.key);
    }
  });
  for (const [key, b] of bans) access.write(key, b.state, b.ttlMs, b.check, true);
  if (admitted) {
    for (const [key, p] of pending) access.write(key, p.state, p.ttlMs, p.check, p.exhausted);
  } else {
    countAlways(access, checks, nowMs);
  }
  const rejections =
    degraded === undefined
      ? undefined
      : trackBackoff(
          access,
          checks,
          steps.map((s) => s.outcome.allowed),
          admitted,
          nowMs,
        );
  return checks.map((check, i) => {
    const step = steps[i]!;
    const o: AlgorithmOutcome = step.outcome;
    const committed = admitted && (o.allowed || check.countOver !== undefined) && check.hits > 0;
    const outcome: LimitOutcome = {
      allowed: o.allowed,
      // Counted past its limit (countOver): nothing is left.
      remaining: committed ? (o.allowed ? o.remainingIfCommitted : 0) : o.remainingIfNotCommitted,
      resetMs: o.resetMs,
      ...(step.borrowed ? { borrowed: true } : {}),
      ...(step.ban !== undefined ? { ban: step.ban } : {}),
      ...(step.needsAggregate === true ? { needsAggregate: true } : {}),
    };
    return degraded === undefined ? outcome : withOnLimit(outcome, committed ? o.delayMs : undefined, committed && degraded[i] === true, rejections?.[i]);
  });
}

/**
 * A rejected batch counts its countOver 'always' checks (a rule's count_every_hit), one after the other on the
 * stored state: the batch's other checks write nothing (lua/batch.lua does the same after putting keys back).
 */
function countAlways(access: StateAccess, checks: readonly LimitCheck[], nowMs: number): void {
  let counted: Map<string, unknown> | undefined;
  for (const check of checks) {
    if (check.countOver !== 'always' || check.hits === 0) continue;
    counted ??= new Map();
    const state = counted.has(check.key) ? counted.get(check.key) : access.read(check.key, check);
    const ev = getAlgorithm(check.algorithm).evaluate(state, nowMs, algorithmParams(check), check.hits);
    counted.set(check.key, ev.next);
    access.write(check.key, ev.next, ev.ttlMs, check, !ev.outcome.allowed || ev.outcome.remainingIfCommitted === 0);
  }
}
