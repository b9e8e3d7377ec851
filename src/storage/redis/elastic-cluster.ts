/**
 * Elastic throttling on Redis Cluster. The aggregate of an elastic rule is one key per rule, with its own hash
 * tag, so it usually sits in another slot than the client's counter, and one script cannot touch both. Then:
 *
 * 1. the client's atomic step runs with use 'ask' (LimitCheck.elastic.use): a client within its own limit, or
 *    above its max, is decided at once; only one that could borrow comes back with needsAggregate (nothing
 *    written);
 * 2. then the aggregate's use is read (an evaluate-only call in its slot) and the step runs again with it;
 *    the client's own limit L and its max M stay exact either way;
 * 3. after an admitted request, its hits are added to the aggregate (a committing call in its slot).
 * So two script calls in turn for a client within its own limit, four for one that borrows.
 *
 * Exactness: the aggregate is read and added to in separate steps, so requests of other replicas (and other
 * descriptors of the same request) that borrow in that gap are not seen: the rule's aggregate can pass its
 * capacity by at most the borrowed hits in flight at once. On a single node (and in memory) it is exact.
 */
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { AGGREGATE_LIMIT } from '../throttling-step.js';
import { keySlot } from './slot.js';

/** Calls the batch script for checks of one slot: commit false evaluates only. */
export type SlotCall = (checks: readonly LimitCheck[], commit: boolean) => Promise<LimitOutcome[]>;

/** The store's atomic step over checks of any slots (RedisStore.decideSlots). */
export type Decide = (checks: readonly LimitCheck[]) => Promise<{ outcomes: LimitOutcome[]; committed: boolean }>;

/** Steps 1–3 for a request whose elastic checks at `indexes` have their aggregate in another slot. */
export async function decideElastic(
  checks: readonly LimitCheck[],
  indexes: readonly number[],
  call: SlotCall,
  decide: Decide,
): Promise<{ outcomes: LimitOutcome[]; committed: boolean }> {
  let sent = checks.map((c, i) => (indexes.includes(i) ? { ...c, elastic: { ...c.elastic!, use: 'ask' as const } } : c));
  let result = await decide(sent);
  if (result.outcomes.some((o) => o.needsAggregate === true)) {
    const first = result.outcomes;
    sent = await withAggregateUse(checks, indexes, call);
    result = await decide(sent);
    // A ban the first step started is seen as live by the second: it is still this request's ban.
    result.outcomes = result.outcomes.map((o, i) => (first[i]!.ban === 'started' && o.ban === 'active' ? { ...o, ban: 'started' as const } : o));
  }
  if (result.committed) await addToAggregates(sent, indexes, result.outcomes, call);
  return result;
}

/** Indexes of the elastic checks whose aggregate is in another slot than the check. */
export function crossSlotElastic(checks: readonly LimitCheck[]): number[] {
  const out: number[] = [];
  checks.forEach((c, i) => {
    if (c.elastic !== undefined && c.elastic.use === undefined && keySlot(c.elastic.key) !== keySlot(c.key)) out.push(i);
  });
  return out;
}

function aggregateCheck(c: LimitCheck, hits: number): LimitCheck {
  return {
    key: c.elastic!.key,
    algorithm: c.elastic!.algorithm ?? c.algorithm,
    limit: AGGREGATE_LIMIT,
    windowMs: c.windowMs,
    burst: c.burst,
    hits,
    enforce: false,
  };
}

/** Step 1: the checks with the aggregate use of each cross-slot elastic check filled in. */
export async function withAggregateUse(checks: readonly LimitCheck[], indexes: readonly number[], call: SlotCall): Promise<LimitCheck[]> {
  const byKey = new Map<string, number>();
  for (const i of indexes) byKey.set(checks[i]!.elastic!.key, i);
  const uses = new Map<string, number>();
  await Promise.all(
    [...byKey].map(async ([key, i]) => {
      const [o] = await call([aggregateCheck(checks[i]!, 0)], false);
      uses.set(key, AGGREGATE_LIMIT - o!.remaining);
    }),
  );
  const out = [...checks];
  for (const i of indexes) {
    const c = checks[i]!;
    out[i] = { ...c, elastic: { ...c.elastic!, use: uses.get(c.elastic!.key)! } };
  }
  return out;
}

/** Step 3: add the hits of the admitted cross-slot elastic checks to their aggregates (one call per aggregate). */
export async function addToAggregates(
  checks: readonly LimitCheck[],
  indexes: readonly number[],
  outcomes: readonly LimitOutcome[],
  call: SlotCall,
): Promise<void> {
  const byKey = new Map<string, LimitCheck[]>();
  for (const i of indexes) {
    const c = checks[i]!;
    if (!outcomes[i]!.allowed || c.hits === 0) continue;
    const list = byKey.get(c.elastic!.key) ?? [];
    list.push(aggregateCheck(c, c.hits));
    byKey.set(c.elastic!.key, list);
  }
  await Promise.all([...byKey.values()].map((list) => call(list, true)));
}
