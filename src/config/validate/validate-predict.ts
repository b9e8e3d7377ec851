/**
 * `predict_cost` on a limit: admission by predicted cost (docs/costs.md). A call for the rule is charged the
 * rule's current prediction instead of its hits, and the cost the response really had is settled later
 * (the difference charged or refunded). The prediction is the mean settled cost over `window`.
 *
 *   rate_limit: {unit: minute, requests_per_unit: 10000, predict_cost: {initial: 500, window: 5m, clip: 4000}}
 *
 * - `initial` (required, 1..requests_per_unit): the prediction until a settled cost has been seen.
 * - `window` (default 5m, 10s..1d): how far back settled costs count.
 * - `clip` (default requests_per_unit, >= 1): the largest settled cost the estimator takes in; a larger one is
 *   taken in as `clip` (the counter is still charged all of it), so that one huge cost cannot poison it.
 *
 * Only on fixed_window and sliding_window_counter, whose count may run past the limit (a settlement is charged
 * whatever the count), and not beside lease, elastic throttling or on_limit delay and degrade, for the same
 * reasons as count_every_hit. One prediction per rule: not inside a `rate_limits` list.
 */
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import type { PredictCost } from '../../vocab/predict-cost.js';
import { parseDuration } from '../duration.js';
import { join, readFields, readMap, valueNode, type Field } from './fields.js';
import { COUNTING_ALGORITHMS } from './validate-count.js';
import { readInt, readString, type FileContext } from './yaml-nodes.js';

export const PREDICT_COST_KEYS = ['initial', 'window', 'clip'] as const;
const DEFAULT_WINDOW_MS = 300_000;
const MIN_WINDOW_MS = 10_000;
const MAX_WINDOW_MS = 86_400_000;
const UINT32_MAX = 4_294_967_295;

interface Beside {
  readonly algorithm: AlgorithmName;
  readonly requestsPerUnit: number | undefined;
  readonly clashes: readonly string[];
  /** The limit is an item of a `rate_limits` list. */
  readonly inList: boolean;
}

/** The `predict_cost` of a limit, or undefined when absent or invalid (errors reported). */
export function readPredictCost(ctx: FileContext, field: Field | undefined, path: string, beside: Beside): PredictCost | undefined {
  if (field === undefined) return undefined;
  const at = join(path, 'predict_cost');
  const errorsBefore = ctx.errors.length;
  const clash = [...beside.clashes];
  if (!COUNTING_ALGORITHMS.includes(beside.algorithm))
    clash.unshift(`algorithm ${beside.algorithm} (only ${COUNTING_ALGORITHMS.join(' and ')} keep a count a settlement may run past the limit)`);
  if (clash.length > 0) ctx.error(field.key, at, `predict_cost cannot go with ${clash.join(', ')}`);
  if (beside.inList) ctx.error(field.key, at, 'predict_cost goes in rate_limit, not in a rate_limits list (one prediction per rule)');
  const map = readMap(ctx, field, at);
  if (map === null) ctx.error(valueNode(ctx, field), at, "predict_cost needs at least 'initial'");
  if (map === null || map === undefined) return undefined;
  const fields = readFields(ctx, map, at, PREDICT_COST_KEYS, 0, false);
  const limit = beside.requestsPerUnit ?? UINT32_MAX;
  const initialField = fields.get('initial');
  let initial: number | undefined;
  if (initialField === undefined) ctx.error(map, join(at, 'initial'), "predict_cost needs 'initial': the prediction until a cost has been settled");
  else initial = readInt(ctx, initialField.value, join(at, 'initial'), 1, Math.max(1, limit), undefined);
  let windowMs = DEFAULT_WINDOW_MS;
  const windowField = fields.get('window');
  if (windowField !== undefined) {
    const text = readString(ctx, windowField.value, join(at, 'window'));
    if (text !== undefined) {
      const parsed = parseDuration(text, MIN_WINDOW_MS, MAX_WINDOW_MS);
      if (parsed.ok) windowMs = parsed.ms;
      else ctx.error(valueNode(ctx, windowField), join(at, 'window'), parsed.reason);
    }
  }
  const clipField = fields.get('clip');
  const clip = clipField === undefined ? Math.max(1, limit) : readInt(ctx, clipField.value, join(at, 'clip'), 1, UINT32_MAX, undefined);
  if (ctx.errors.length > errorsBefore || initial === undefined || clip === undefined) return undefined;
  return { initial, windowMs, clip };
}
