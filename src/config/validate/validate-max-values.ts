/**
 * `max_values: N` and `on_max_values: overflow | reject` of a limit: a bound on the distinct counters (client
 * values) the limit tracks per window. Past N, a new value is counted in one overflow counter under the same
 * limit (overflow, the default), or rejected (reject). Refused on a rule whose every descriptor has a fixed value
 * (it keeps one counter per window: there is nothing to bound), and `reject` beside elastic throttling (a value
 * rejected past the bound could still borrow the rule's spare capacity and be admitted).
 */
import type { MaxValues } from '../types.js';
import { join, valueNode, type Fields } from './fields.js';
import { notOneOfMessage } from './schema.js';
import { readInt, readString, type FileContext } from './yaml-nodes.js';

/** The largest bound: each replica keeps up to this many values per limit in memory. */
export const MAX_VALUES_BOUND = 1_000_000;
const ACTIONS = ['overflow', 'reject'] as const;

export function readMaxValues(
  ctx: FileContext,
  fields: Fields,
  path: string,
  rule: { readonly perClientValue: boolean; readonly elastic: boolean },
): MaxValues | undefined {
  const field = fields.get('max_values');
  const actionField = fields.get('on_max_values');
  if (field === undefined) {
    if (actionField !== undefined) ctx.error(actionField.key, join(path, 'on_max_values'), "'on_max_values' goes with 'max_values'");
    return undefined;
  }
  if (!rule.perClientValue) {
    ctx.error(
      field.key,
      join(path, 'max_values'),
      "max_values bounds the values a client chooses, but every descriptor on this rule's path has a fixed value: the rule keeps one counter per window; remove max_values",
    );
    return undefined;
  }
  const max = readInt(ctx, field.value, join(path, 'max_values'), 1, MAX_VALUES_BOUND, undefined);
  let onMax: MaxValues['onMax'] = 'overflow';
  if (actionField !== undefined) {
    const at = join(path, 'on_max_values');
    const text = readString(ctx, actionField.value, at);
    if (text === 'reject' && rule.elastic) {
      ctx.error(
        valueNode(ctx, actionField),
        at,
        "on_max_values: reject cannot go with elastic throttling: a value rejected past the bound could borrow the rule's spare capacity and be admitted; use overflow",
      );
      return undefined;
    }
    if (text === 'overflow' || text === 'reject') onMax = text;
    else if (text !== undefined) {
      ctx.error(valueNode(ctx, actionField), at, notOneOfMessage(text, ACTIONS));
      return undefined;
    }
  }
  return max === undefined ? undefined : Object.freeze({ max, onMax });
}
