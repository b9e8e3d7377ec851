/**
 * Admission by predicted cost, after the store has decided (src/cost/ holds the estimator and the settlement
 * arithmetic; resolve.ts gives each descriptor its role): settled costs go into the estimator, the observer
 * hears of predictions, settlements and refunds, and the prediction of an admitted descriptor goes back to
 * Envoy as the dynamic metadata entry `predicted_cost` (a string: Envoy's `metadata` rate-limit action reads
 * only string values), for the settlement at stream end.
 */
import type { CostEstimator } from '../cost/estimator.js';
import { PREDICTED_COST_KEY } from '../cost/settlement.js';
import type { LimitOutcome } from '../storage/counter-store.js';
import type { DecisionObserver } from './observer.js';
import type { Resolved } from './resolve.js';

/** Some descriptor of the request has a role in admission by predicted cost (most requests have none). */
export function hasCost(resolved: readonly Resolved[]): boolean {
  for (const r of resolved) if (r.cost !== undefined) return true;
  return false;
}

/**
 * Feeds the estimator and the observer with one decision's settlements and predictions (not for a dry run);
 * returns the `predicted_cost` to answer with: the first predicting descriptor's, when the request was admitted
 * (a rejected request was charged nothing, and Envoy then sends no settlement: its `metadata` action finds no value).
 */
export function reportCosts(
  domain: string,
  resolved: readonly Resolved[],
  outcomes: readonly LimitOutcome[],
  ctx: { estimator: CostEstimator; nowMs: number; observer: DecisionObserver; dryRun: boolean; admitted: boolean },
): string | undefined {
  let answer: string | undefined;
  for (const r of resolved) {
    const role = r.cost;
    if (role === undefined || r.rule === undefined) continue;
    if (role.kind === 'admission') {
      let admitted = ctx.admitted && r.limits.length > 0;
      for (let j = 0; j < r.limits.length; j++) if (outcomes[r.firstCheck + j]?.allowed !== true) admitted = false;
      if (admitted && answer === undefined) answer = String(role.predicted);
      if (admitted && r.hits > 0 && !ctx.dryRun) ctx.observer.onCost?.(domain, r.rule.statsKey, 'prediction');
    } else if (ctx.dryRun) {
      continue;
    } else if (role.kind === 'settlement') {
      const spec = r.rule.limits[0]?.predictCost;
      if (spec !== undefined) ctx.estimator.observe(r.rule.statsKey, spec, role.actual, ctx.nowMs);
      ctx.observer.onCost?.(domain, r.rule.statsKey, role.actual < role.predicted ? 'refund' : 'settlement');
    } else {
      ctx.observer.onCost?.(domain, r.rule.statsKey, role.reason);
    }
  }
  return answer;
}

/** The response's dynamic metadata with `predicted_cost` added (when there is one). */
export function withPrediction(
  metadata: Readonly<Record<string, unknown>> | undefined,
  predicted: string | undefined,
): Readonly<Record<string, unknown>> | undefined {
  if (predicted === undefined) return metadata;
  return { ...metadata, [PREDICTED_COST_KEY]: predicted };
}
