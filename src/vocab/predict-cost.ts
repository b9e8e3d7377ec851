/** A limit's `predict_cost` (admission by predicted cost, docs/costs.md), as validated. */
export interface PredictCost {
  /** The prediction before any settled cost (>= 1). */
  readonly initial: number;
  /** How long a settled cost counts in the mean, ms. */
  readonly windowMs: number;
  /** The largest settled cost taken into the mean (>= 1). */
  readonly clip: number;
}
