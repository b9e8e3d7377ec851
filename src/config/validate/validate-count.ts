/**
 * `count_every_hit: true` on a limit: every hit sent for the limit is counted, even when
 * it crosses the limit or the request is rejected, as envoyproxy/ratelimit counts every hit. It is what a
 * cost charged after the response needs (Envoy's `apply_on_stream_done` with a `hits_addend` such as the
 * LLM tokens a response used, docs/costs.md): that call's answer is ignored, so a charge that were dropped
 * for crossing the limit would never count.
 *
 * Only where the count may run past the limit and shrink back with time: fixed_window and
 * sliding_window_counter. A bucket has no count to run past (it would be debt with no bound) and the exact log
 * keeps at most L entries; both are refused at load, with the reason. So are the fields whose meaning needs
 * the hits to stay within the limit or to be decided away from the store: lease, elastic throttling,
 * on_limit delay and degrade.
 */
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { join, valueNode, type Field } from './fields.js';
import type { CompiledOnLimit } from '../on-limit-types.js';
import type { Throttling } from '../../vocab/throttling.js';
import { readBool, type FileContext } from './yaml-nodes.js';

export const COUNTING_ALGORITHMS: readonly AlgorithmName[] = ['fixed_window', 'sliding_window_counter'];

interface Beside {
  readonly onLimit?: CompiledOnLimit;
  readonly throttling?: Throttling;
  readonly leased: boolean;
}

/** `count_every_hit` of a limit: true, or undefined when absent, false or invalid (errors reported). */
export function readCountEveryHit(ctx: FileContext, fields: Map<string, Field>, path: string, algorithm: AlgorithmName, beside: Beside): true | undefined {
  const field = fields.get('count_every_hit');
  if (field === undefined) return undefined;
  const at = join(path, 'count_every_hit');
  const on = readBool(ctx, field.value, at);
  if (on !== true) return undefined;
  const clash: string[] = [];
  if (!COUNTING_ALGORITHMS.includes(algorithm))
    clash.push(`algorithm ${algorithm} (only ${COUNTING_ALGORITHMS.join(' and ')} keep a count that may run past the limit)`);
  if (beside.leased) clash.push('lease (leased units are decided away from the store)');
  if (beside.throttling?.mode === 'elastic') clash.push('elastic throttling');
  if (beside.onLimit?.action === 'delay' || beside.onLimit?.action === 'degrade') clash.push(`on_limit action '${beside.onLimit.action}'`);
  if (clash.length === 0) return true;
  ctx.error(valueNode(ctx, field), at, `count_every_hit cannot go with ${clash.join(', ')}`);
  return undefined;
}
