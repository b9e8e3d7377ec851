/**
 * The batch contract of CounterStore (storage/counter-store.ts) over any synchronous key → state access,
 * shared by the memory store, the local fallback and tests:
 *
 * 1. evaluate every check at `nowMs` against the current state;
 * 2. the batch is admitted iff every check with `enforce` is allowed;
 * 3. only then write the next state of each allowed check with hits > 0;
 * 4. a rejected batch writes nothing. `remaining` is the quota after the commit when the check was
 *    committed, else the quota as the state stands.
 *
 * Several checks on the same key in one batch (a descriptor sent twice) count one after the other: a later
 * check is evaluated on the state an earlier allowed check of the batch would leave, and the last such state
 * is written. So two checks of 1 hit on a key with 1 left allow the first and reject the second.
 */
import { getAlgorithm } from '../../algorithms/registry.js';
import type { AlgorithmOutcome } from '../../algorithms/types.js';
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
  const outcomes: AlgorithmOutcome[] = [];
  /** Checks admitted as degraded (on_limit); undefined while no check of the batch has an on_limit. */
  let degraded: boolean[] | undefined;
  let admitted = true;
  checks.forEach((check, i) => {
    const earlier = pending.get(check.key);
    const state = earlier !== undefined ? earlier.state : access.read(check.key, check);
    let { outcome, next, ttlMs } = getAlgorithm(check.algorithm).evaluate(state, nowMs, algorithmParams(check), check.hits);
    let writeKey: string | undefined = check.key;
    let writeCheck = check;
    if (check.onLimit !== undefined) {
      // on_limit degrade (on-limit-batch.ts): a rejected check admitted anyway, counted under its degrade key.
      degraded ??= [];
      const degrade = degradeCheck(check, outcome, nowMs, (k, c) => (pending.has(k) ? pending.get(k)!.state : access.read(k, c)));
      degraded[i] = degrade !== undefined;
      if (degrade !== undefined) {
        ({ outcome } = degrade);
        writeKey = degrade.write?.key;
        if (degrade.write !== undefined) ({ state: next, ttlMs, check: writeCheck } = degrade.write);
      }
    }
    outcomes.push(outcome);
    if (!outcome.allowed && check.enforce) admitted = false;
    if (outcome.allowed && check.hits > 0) {
      if (writeKey !== undefined) pending.set(writeKey, { state: next, ttlMs, check: writeCheck, exhausted: outcome.remainingIfCommitted === 0 });
    } else if (!outcome.allowed && outcome.remainingIfNotCommitted === 0 && earlier === undefined) {
      // Only a check decided on the stored state says the stored key has nothing left (a repeated key is
      // decided on what its earlier checks would leave, which a rejected batch never writes).
      access.rejected?.(check.key);
    }
  });
  if (admitted) {
    for (const [key, p] of pending) access.write(key, p.state, p.ttlMs, p.check, p.exhausted);
  }
  const rejections = degraded === undefined ? undefined : trackBackoff(access, checks, outcomes.map((o) => o.allowed), admitted, nowMs);
  return checks.map((check, i) => {
    const o = outcomes[i]!;
    const committed = admitted && o.allowed && check.hits > 0;
    const outcome = { allowed: o.allowed, remaining: committed ? o.remainingIfCommitted : o.remainingIfNotCommitted, resetMs: o.resetMs };
    return degraded === undefined ? outcome : withOnLimit(outcome, committed ? o.delayMs : undefined, committed && degraded[i] === true, rejections?.[i]);
  });
}
