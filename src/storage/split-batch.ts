/**
 * The second half of a batch split between a local decision and the store (counter-store.ts's batch contract):
 * the lease store and the capacity-rule store decide some checks in process, from units they hold, and send
 * the rest here.
 *
 * - When the local part rejected, the rest is only read (hits 0): nothing is counted, and each outcome is
 *   what the store says of that limit, `storeFailure` included (a limit the store could not read is reported
 *   as such, never as a limit that rejected on its own).
 * - Otherwise the rest is applied through the store; when the store rejects an enforced check, or fails,
 *   the local units go back (`putBack`), so a rejected request consumes nothing anywhere.
 */
import type { ApplyOptions, CounterStore, LimitCheck, LimitOutcome } from './counter-store.js';

export interface RestOfBatch {
  /** The outcomes of the checks sent to the store, in the order of `rest`. */
  readonly outcomes: LimitOutcome[];
  /** The whole batch was admitted: the local part and every enforced check of the rest. */
  readonly admitted: boolean;
}

/**
 * Decides `checks[i]` for each i of `rest` through `store`, given whether the locally decided checks admitted the
 * request; `putBack` returns the units the local part took (called at most once, only when the batch is rejected).
 */
export async function applyRest(
  store: CounterStore,
  checks: readonly LimitCheck[],
  rest: readonly number[],
  localAdmitted: boolean,
  putBack: () => void,
  nowMs: number,
  options?: ApplyOptions,
): Promise<RestOfBatch> {
  if (rest.length === 0) {
    if (!localAdmitted) putBack();
    return { outcomes: [], admitted: localAdmitted };
  }
  const restChecks = rest.map((i) => checks[i]!);
  if (!localAdmitted) {
    putBack();
    const read = await store.apply(
      restChecks.map((c) => ({ ...c, hits: 0 })),
      nowMs,
      options,
    );
    return { outcomes: read.map((o, k) => ({ ...o, allowed: o.allowed && restChecks[k]!.hits <= o.remaining })), admitted: false };
  }
  let outcomes: LimitOutcome[];
  try {
    outcomes = await store.apply(restChecks, nowMs, options);
  } catch (error) {
    putBack();
    throw error;
  }
  const admitted = !restChecks.some((c, k) => c.enforce && !outcomes[k]!.allowed);
  if (!admitted) putBack();
  return { outcomes, admitted };
}
