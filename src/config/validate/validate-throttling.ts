/**
 * Validation of the throttling fields of one limit (docs/throttling.md): `throttling` (hard | {soft: p%} |
 * {elastic: {capacity, max}}), `ban` (a duration, as `window`) and `shares` ({critical, default, sheddable}
 * percentages). Called by validate-limits.ts readLimit once the algorithm and requests_per_unit are known.
 */
import { isMap, isScalar } from 'yaml';
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { CRITICALITY_CLASSES, PPM, type Criticality, type Shares, type Throttling } from '../../vocab/throttling.js';
import { parseWindow } from '../duration.js';
import { join, readFields, valueNode } from './fields.js';
import type { Field, Fields } from './fields.js';
import { notOneOfMessage } from './schema.js';
import { describeNode, readInt, scalarKind } from './yaml-nodes.js';
import type { FileContext } from './yaml-nodes.js';

const UINT32_MAX = 4_294_967_295;
const WINDOW_ALGORITHMS: readonly AlgorithmName[] = ['fixed_window', 'sliding_window_log', 'sliding_window_counter'];
const MODES = ['hard', 'soft', 'elastic'] as const;
const ELASTIC_KEYS = ['capacity', 'max'] as const;
const PERCENT = /^([0-9]{1,3})(?:\.([0-9]{1,4}))?%$/;

/** What the throttling fields of one limit compile to; each absent when not written (or hard). */
export interface ThrottlingFields {
  readonly throttling?: Throttling;
  readonly banMs?: number;
  readonly shares?: Shares;
}

/** Parses `80%` / `12.5%` (at most 4 decimals) to ppm; undefined when it is not written like that. */
export function parsePercent(text: string): number | undefined {
  const m = PERCENT.exec(text.trim());
  if (m === null) return undefined;
  return Number(m[1]) * 10_000 + Number((m[2] ?? '').padEnd(4, '0'));
}

export function readThrottlingFields(
  ctx: FileContext,
  fields: Fields,
  path: string,
  algorithm: AlgorithmName,
  requestsPerUnit: number | undefined,
): ThrottlingFields {
  const throttlingField = fields.get('throttling');
  const throttling = throttlingField === undefined ? undefined : readThrottling(ctx, throttlingField, join(path, 'throttling'), algorithm, requestsPerUnit);
  const banField = fields.get('ban');
  const banMs = banField === undefined ? undefined : readBan(ctx, banField, join(path, 'ban'));
  const sharesField = fields.get('shares');
  const shares = sharesField === undefined ? undefined : readShares(ctx, sharesField, join(path, 'shares'));
  return {
    ...(throttling !== undefined ? { throttling } : {}),
    ...(banMs !== undefined ? { banMs } : {}),
    ...(shares !== undefined ? { shares } : {}),
  };
}

function readThrottling(ctx: FileContext, field: Field, path: string, algorithm: AlgorithmName, rpu: number | undefined): Throttling | undefined {
  const node = valueNode(ctx, field);
  const shape = 'must be hard, {soft: 10%} or {elastic: {capacity: N, max: M}}';
  let mode: string;
  let body: unknown;
  if (isScalar(node) && scalarKind(node) === 'string') {
    mode = String(node.value);
  } else if (isMap(node) && node.items.length === 1) {
    const only = node.items[0]!;
    const key = ctx.deref(only.key);
    mode = key !== undefined && isScalar(key) ? String(key.value) : '';
    body = only.value;
  } else {
    ctx.error(node, path, `${shape}, not ${describeNode(node)}`);
    return undefined;
  }
  if (!(MODES as readonly string[]).includes(mode)) {
    ctx.error(node, path, notOneOfMessage(mode, MODES));
    return undefined;
  }
  if (mode === 'hard') {
    if (body !== undefined) ctx.error(node, path, `${shape}; 'hard' takes no value`);
    return undefined;
  }
  if (body === undefined) {
    ctx.error(node, path, `${shape}; '${mode}' needs its settings`);
    return undefined;
  }
  if (!WINDOW_ALGORITHMS.includes(algorithm)) {
    ctx.error(
      node,
      path,
      `${mode} throttling applies only to fixed_window, sliding_window_log and sliding_window_counter: ${algorithm} has no window to exceed; let more requests through with a larger 'burst' instead`,
    );
    return undefined;
  }
  const bodyPath = join(path, mode);
  if (mode === 'soft') {
    const ppm = readPercent(ctx, body, bodyPath);
    if (ppm === undefined) return undefined;
    return { mode: 'soft', ppm };
  }
  const map = ctx.deref(body);
  if (map === undefined || !isMap(map)) {
    ctx.error(map ?? node, bodyPath, `must be a mapping {capacity: N, max: M}, not ${describeNode(map)}`);
    return undefined;
  }
  const elastic = readFields(ctx, map, bodyPath, ELASTIC_KEYS);
  const missing = ELASTIC_KEYS.filter((k) => !elastic.has(k));
  if (missing.length > 0) {
    ctx.error(map, bodyPath, `elastic needs ${missing.join(' and ')}`);
    return undefined;
  }
  const capacity = readInt(ctx, elastic.get('capacity')!.value, join(bodyPath, 'capacity'), 1, UINT32_MAX, undefined);
  const max = readInt(ctx, elastic.get('max')!.value, join(bodyPath, 'max'), 1, UINT32_MAX, undefined);
  if (capacity === undefined || max === undefined) return undefined;
  if (rpu !== undefined && max <= rpu) {
    ctx.error(
      valueNode(ctx, elastic.get('max')!),
      join(bodyPath, 'max'),
      `max (${max}) must be above requests_per_unit (${rpu}): it is how far a client may go above its own limit`,
    );
    return undefined;
  }
  return { mode: 'elastic', capacity, max };
}

/** A percentage in (0%, 100%]. */
function readPercent(ctx: FileContext, raw: unknown, path: string): number | undefined {
  const node = ctx.deref(raw);
  const text = node !== undefined && isScalar(node) ? String(node.value) : undefined;
  const ppm = text === undefined ? undefined : parsePercent(text);
  if (ppm === undefined) {
    ctx.error(node, path, `must be a percentage like 10% or 12.5%, not ${describeNode(node)}`);
    return undefined;
  }
  if (ppm <= 0 || ppm > PPM) {
    ctx.error(node, path, `${text!.trim()} is out of range: must be above 0% and at most 100%`);
    return undefined;
  }
  return ppm;
}

function readBan(ctx: FileContext, field: Field, path: string): number | undefined {
  const node = valueNode(ctx, field);
  if (!isScalar(node) || scalarKind(node) === 'null') {
    ctx.error(node, path, `must be a duration like 30s, 20m or 1h, not ${describeNode(node)}`);
    return undefined;
  }
  const parsed = parseWindow(String(node.value));
  if (!parsed.ok) {
    ctx.error(node, path, parsed.reason.replace('not a window', 'not a duration').replace('minimum window', 'minimum ban'));
    return undefined;
  }
  return parsed.ms;
}

/** A class left out gets the share of the class above it (critical: 100%), so the order always holds. */
function readShares(ctx: FileContext, field: Field, path: string): Shares | undefined {
  const node = valueNode(ctx, field);
  if (!isMap(node)) {
    ctx.error(node, path, `must be a mapping {critical: 100%, default: 80%, sheddable: 50%}, not ${describeNode(node)}`);
    return undefined;
  }
  const fields = readFields(ctx, node, path, CRITICALITY_CLASSES);
  const shares: Partial<Record<Criticality, number>> = {};
  let above = PPM;
  let ok = true;
  for (const c of CRITICALITY_CLASSES) {
    const f = fields.get(c);
    const ppm = f === undefined ? above : readPercent(ctx, f.value, join(path, c));
    if (ppm === undefined) {
      ok = false;
      continue;
    }
    if (ppm > above) {
      const higher = CRITICALITY_CLASSES[CRITICALITY_CLASSES.indexOf(c) - 1]!;
      ctx.error(valueNode(ctx, f!), join(path, c), `the ${c} share must not be above the ${higher} share: critical ≥ default ≥ sheddable`);
      ok = false;
    }
    shares[c] = ppm;
    above = ppm;
  }
  return ok ? (shares as Shares) : undefined;
}

/**
 * `on_limit: {action: degrade}` admits requests over the limit, as elastic borrowing does, and so never
 * rejects what a `ban` would punish: each pair is refused, naming the throttling field.
 */
export function checkBesideDegrade(ctx: FileContext, fields: Fields, path: string, action: string | undefined, throttling: ThrottlingFields): void {
  if (action !== 'degrade') return;
  const ban = fields.get('ban');
  if (throttling.banMs !== undefined && ban !== undefined) {
    ctx.error(
      valueNode(ctx, ban),
      join(path, 'ban'),
      "a ban needs rejections, and on_limit action 'degrade' admits requests over the limit instead: use one or the other",
    );
  }
  const mode = fields.get('throttling');
  if (throttling.throttling?.mode === 'elastic' && mode !== undefined) {
    ctx.error(
      valueNode(ctx, mode),
      join(path, 'throttling'),
      "elastic throttling and on_limit action 'degrade' both admit requests over the limit: use one or the other",
    );
  }
}
