/**
 * `capacity: {resource, fallback, wants, min_wants, headroom}` of a rate_limit (docs/capacity-client.md):
 * the limit is this replica's share of a capacity resource, granted by the capacity service (CAPACITY_SERVER) for
 * its observed demand and decided in process (src/core/capacity-store.ts). `requests_per_unit` is the ceiling: the
 * most the replica asks for and admits per window. Defaults: fallback safe, wants observed, min_wants 1, headroom 20%.
 */
import { isScalar } from 'yaml';
import type { CapacityFallback, CapacityRuleSpec } from '../../vocab/capacity-rule.js';
import { join, readFields, readMap, valueNode, type Field, type Fields } from './fields.js';
import { notOneOfMessage } from './schema.js';
import { describeNode, readInt, readString, scalarKind, type FileContext } from './yaml-nodes.js';

export const CAPACITY_RULE_KEYS = ['resource', 'fallback', 'wants', 'min_wants', 'headroom'] as const;
const FALLBACKS: readonly CapacityFallback[] = ['pessimistic', 'optimistic', 'safe'];
const MAX_RESOURCE_BYTES = 256;
const MAX_WANTS = 4_294_967_295;
const PERCENT = /^([0-9]+(?:\.[0-9]+)?)%$/;
/** Fields decided in the store, which a limit decided in process cannot have. */
const STORE_SIDE = ['lease', 'throttling', 'ban', 'shares', 'on_limit', 'burst'] as const;

/** The capacity spec of one limit; undefined when absent (or invalid: then an error was reported). */
export function readCapacityRule(ctx: FileContext, fields: Fields, path: string, requestsPerUnit: number | undefined): CapacityRuleSpec | undefined {
  const field = fields.get('capacity');
  if (field === undefined) return undefined;
  const capPath = join(path, 'capacity');
  const errorsBefore = ctx.errors.length;
  checkBeside(ctx, fields, path);
  if (fields.get('requests_per_unit') === undefined || requestsPerUnit === 0) {
    ctx.error(field.key, join(path, 'requests_per_unit'), 'a capacity limit needs requests_per_unit ≥ 1: the most this replica asks for and admits per window');
  }
  const map = readMap(ctx, field, capPath);
  if (map === undefined) return undefined;
  if (map === null) {
    ctx.error(field.key, join(capPath, 'resource'), 'capacity needs a resource: the capacity service resource id, e.g. {resource: api-backend}');
    return undefined;
  }
  const own = readFields(ctx, map, capPath, CAPACITY_RULE_KEYS);
  const resource = readResource(ctx, own.get('resource'), capPath, field);
  const fallback = readFallback(ctx, own.get('fallback'), join(capPath, 'fallback'));
  const wants = readWants(ctx, own.get('wants'), join(capPath, 'wants'));
  const minField = own.get('min_wants');
  const minWants = minField === undefined ? 1 : readInt(ctx, minField.value, join(capPath, 'min_wants'), 0, MAX_WANTS, undefined);
  const headroom = readHeadroom(ctx, own.get('headroom'), join(capPath, 'headroom'));
  if (
    ctx.errors.length > errorsBefore ||
    resource === undefined ||
    fallback === undefined ||
    wants === undefined ||
    minWants === undefined ||
    headroom === undefined
  )
    return undefined;
  return { resource, fallback, wants, minWants, headroomPercent: headroom };
}

function checkBeside(ctx: FileContext, fields: Fields, path: string): void {
  for (const name of STORE_SIDE) {
    const other = fields.get(name);
    if (other !== undefined)
      ctx.error(
        other.key,
        join(path, name),
        `'${name}' cannot go with 'capacity': a capacity limit is decided in process from the granted share, not in the store`,
      );
  }
  const algorithm = fields.get('algorithm');
  if (algorithm !== undefined) {
    const node = valueNode(ctx, algorithm);
    if (!isScalar(node) || String(node.value) !== 'token_bucket') {
      ctx.error(
        node,
        join(path, 'algorithm'),
        `a capacity limit is decided by a token bucket refilled at the granted share: drop 'algorithm' or set token_bucket`,
      );
    }
  }
}

function readResource(ctx: FileContext, field: Field | undefined, capPath: string, capField: Field): string | undefined {
  const path = join(capPath, 'resource');
  if (field === undefined) {
    ctx.error(capField.key, path, 'capacity needs a resource: the capacity service resource id, e.g. {resource: api-backend}');
    return undefined;
  }
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  if (text === '' || Buffer.byteLength(text) > MAX_RESOURCE_BYTES || [...text].some((ch) => ch.charCodeAt(0) < 0x20)) {
    ctx.error(valueNode(ctx, field), path, `must be a resource id of 1 to ${MAX_RESOURCE_BYTES} bytes without control characters`);
    return undefined;
  }
  return text;
}

function readFallback(ctx: FileContext, field: Field | undefined, path: string): CapacityFallback | undefined {
  if (field === undefined) return 'safe';
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  if ((FALLBACKS as readonly string[]).includes(text)) return text as CapacityFallback;
  ctx.error(valueNode(ctx, field), path, notOneOfMessage(text, FALLBACKS));
  return undefined;
}

function readWants(ctx: FileContext, field: Field | undefined, path: string): 'observed' | number | undefined {
  if (field === undefined) return 'observed';
  const node = valueNode(ctx, field);
  if (isScalar(node) && scalarKind(node) === 'string' && String(node.value) === 'observed') return 'observed';
  if (isScalar(node) && scalarKind(node) === 'int') return readInt(ctx, field.value, path, 0, MAX_WANTS, undefined);
  ctx.error(node, path, `must be 'observed' (the replica's request rate) or a whole number of requests per window, not ${describeNode(node)}`);
  return undefined;
}

function readHeadroom(ctx: FileContext, field: Field | undefined, path: string): number | undefined {
  if (field === undefined) return 20;
  const node = valueNode(ctx, field);
  const m = isScalar(node) && scalarKind(node) === 'string' ? PERCENT.exec(String(node.value).trim()) : null;
  const percent = m === null ? NaN : Number(m[1]);
  if (percent >= 0 && percent <= 1000) return percent;
  ctx.error(node, path, `must be a percentage from 0% to 1000% (e.g. 20%), not ${describeNode(node)}`);
  return undefined;
}
