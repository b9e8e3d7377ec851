/**
 * What one descriptor means for admission by predicted cost (docs/costs.md), decided before the store is asked:
 *
 * - an admission: the rule has `predict_cost` and the call carries no `predicted_cost` entry. It is charged the
 *   prediction P instead of its hits (a pure check, hits 0, stays one) and may be rejected as usual; P goes back
 *   to Envoy in the response's dynamic metadata.
 * - a settlement: the call carries an entry `predicted_cost: <P>` (Envoy's `metadata` action reading that
 *   metadata at stream end) and the actual cost A as its hits. The entry is taken off before the rule is looked
 *   up. A − P is charged when A >= P, P − A refunded when A < P (a count never below 0); never rejected; A feeds
 *   the estimator.
 * - a `predicted_cost` entry whose value is not a whole number from 1 to max(initial, clip) (no prediction of
 *   the rule can be more), or on a rule without `predict_cost`: the entry is taken off and the call is an
 *   ordinary charge of its hits ('unsettled', logged once per rule).
 *
 * The entry key `predicted_cost` is therefore reserved: a rules tree cannot match on it.
 */
import type { PredictCost } from '../vocab/predict-cost.js';
import type { DescriptorEntry } from '../vocab/types.js';

export const PREDICTED_COST_KEY = 'predicted_cost';
/** The largest P a settlement may carry (a prediction is at most a limit, a uint32). */
const MAX_PREDICTED = 4_294_967_295;

/** The entries without the settlement entry, and its value; undefined when the call carries none. */
export function splitSettlement(entries: readonly DescriptorEntry[]): { entries: DescriptorEntry[]; value: string } | undefined {
  let at = -1;
  for (let i = 0; i < entries.length; i++) if (entries[i]!.key === PREDICTED_COST_KEY) at = i;
  if (at < 0) return undefined;
  return { entries: entries.filter((e) => e.key !== PREDICTED_COST_KEY), value: entries[at]!.value };
}

/** P as a settlement carries it: a whole number from 1 (what a prediction can be); undefined otherwise. */
export function parsePredicted(text: string): number | undefined {
  if (!/^[0-9]{1,10}$/.test(text)) return undefined;
  const p = Number(text);
  return p >= 1 && p <= MAX_PREDICTED ? p : undefined;
}

/** How a settlement of actual cost `actual` against prediction `predicted` changes the count. */
export function settle(predicted: number, actual: number): { charge: number; refund: number } {
  return actual >= predicted ? { charge: actual - predicted, refund: 0 } : { charge: 0, refund: predicted - actual };
}

/** What a descriptor is for admission by predicted cost (carried on the engine's resolved descriptor). */
export type CostRole =
  | { readonly kind: 'admission'; readonly predicted: number }
  | { readonly kind: 'settlement'; readonly predicted: number; readonly actual: number }
  | { readonly kind: 'unsettled'; readonly reason: 'unparsed' | 'unpredicted' };

/** A post-response charge: counted whatever the count, never rejected. */
export function isPostResponse(role: CostRole | undefined): boolean {
  return role !== undefined && (role.kind === 'settlement' || (role.kind === 'unsettled' && role.reason === 'unparsed'));
}

/**
 * The role of a descriptor whose rule has `spec` (the rule's `predict_cost`, or undefined), that carried the
 * settlement entry `settlement` (or none), with `hits` (A for a settlement); `predict` gives the rule's P.
 * Returns the hits to charge and the units to refund, or undefined when the call is no concern of this room.
 */
export function costRole(
  spec: PredictCost | undefined,
  settlement: string | undefined,
  hits: number,
  predict: () => number,
): { hits: number; refund: number; role: CostRole } | undefined {
  if (settlement === undefined) {
    if (spec === undefined) return undefined;
    const predicted = predict();
    return { hits: hits === 0 ? 0 : predicted, refund: 0, role: { kind: 'admission', predicted } };
  }
  if (spec === undefined) return { hits, refund: 0, role: { kind: 'unsettled', reason: 'unpredicted' } };
  const predicted = parsePredicted(settlement);
  // No prediction of this rule exceeds max(initial, clip) (a mean of clipped costs): a larger P did not come
  // from here, and refunding it would wipe the count.
  if (predicted === undefined || predicted > Math.max(spec.initial, spec.clip)) return { hits, refund: 0, role: { kind: 'unsettled', reason: 'unparsed' } };
  const { charge, refund } = settle(predicted, hits);
  return { hits: charge, refund, role: { kind: 'settlement', predicted, actual: hits } };
}
