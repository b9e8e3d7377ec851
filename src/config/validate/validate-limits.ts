/**
 * Validation of `rate_limit` / `rate_limits` blocks: envoyproxy/ratelimit's rules (unit, unlimited, name,
 * replaces) plus our extensions (window, algorithm, burst, several limits on one key, file defaults).
 */
import type { Node, YAMLMap } from 'yaml';
import { ALGORITHM_NAMES, isAlgorithmName } from '../../vocab/algorithm-names.js';
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { UNITS, UNIT_SECONDS, largestDividingUnit } from '../../vocab/types.js';
import type { Unit } from '../../vocab/types.js';
import { paramsError } from '../../algorithms/registry.js';
import { parseWindow } from '../duration.js';
import { readOnLimit } from './on-limit.js';
import { checkBesideLease, readLease } from './validate-lease.js';
import { readCountEveryHit } from './validate-count.js';
import { readCapacityRule } from './validate-capacity-rule.js';
import { readPredictCost } from './validate-predict.js';
import { hasCalendar, readCalendar } from './validate-calendar.js';
import { readMaxValues } from './validate-max-values.js';
import { join, readFields, readMap, readMapList, valueNode } from './fields.js';
import type { Field, Fields } from './fields.js';
import type { RawLimit, RawRule } from '../raw.js';
import { RATE_LIMIT_KEYS, REPLACES_KEYS, notOneOfMessage } from './schema.js';
import { checkBesideDegrade, readThrottlingFields } from './validate-throttling.js';
import { readBool, readInt, readString } from './yaml-nodes.js';
import type { FileContext } from './yaml-nodes.js';

export const UINT32_MAX = 4_294_967_295;
const BURST_ALGORITHMS: readonly AlgorithmName[] = ['token_bucket', 'leaky_bucket'];
const UNLIMITED_CLASHES = ['window', 'algorithm', 'burst', 'on_limit', 'throttling', 'ban', 'shares', 'lease', 'count_every_hit', 'capacity'] as const;

/** The top-level `defaults:` block of a file. */
export interface FileDefaults {
  readonly algorithm?: AlgorithmName;
  readonly burst?: number;
}

/** What the limits of one descriptor are read with: the file's defaults and what the descriptor's path says. */
export interface LimitContext extends FileDefaults {
  /** Some descriptor on the path takes the value from the request (no `value`, a wildcard): `max_values` applies. */
  readonly perClientValue?: boolean;
}

export function readAlgorithm(ctx: FileContext, field: Field | undefined, path: string): AlgorithmName | undefined {
  if (field === undefined) return undefined;
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  if (isAlgorithmName(text)) return text;
  ctx.error(valueNode(ctx, field), path, notOneOfMessage(text, ALGORITHM_NAMES));
  return undefined;
}

/** `rate_limit: {...}` or `rate_limits: [...]` of one descriptor; undefined when absent or invalid. */
export function readRule(ctx: FileContext, fields: Fields, path: string, defaults: LimitContext): RawRule | undefined {
  const single = fields.get('rate_limit');
  const list = fields.get('rate_limits');
  if (single !== undefined && list !== undefined) {
    ctx.error(list.key, join(path, 'rate_limits'), "'rate_limit' and 'rate_limits' are mutually exclusive");
    // Still validate both, to report everything wrong in one pass.
    const map = readMap(ctx, single, join(path, 'rate_limit'));
    if (map) readSingleRule(ctx, map, join(path, 'rate_limit'), defaults);
    readRuleList(ctx, list, join(path, 'rate_limits'), defaults);
    return undefined;
  }
  if (single !== undefined) {
    const map = readMap(ctx, single, join(path, 'rate_limit'));
    // `rate_limit:` with nothing after it means no limit, as in envoyproxy/ratelimit.
    if (map === null) return undefined;
    if (map === undefined) return undefined;
    return readSingleRule(ctx, map, join(path, 'rate_limit'), defaults);
  }
  if (list !== undefined) return readRuleList(ctx, list, join(path, 'rate_limits'), defaults);
  return undefined;
}

function readSingleRule(ctx: FileContext, map: YAMLMap, path: string, defaults: LimitContext): RawRule | undefined {
  const fields = readFields(ctx, map, path, RATE_LIMIT_KEYS);
  const unlimitedField = fields.get('unlimited');
  const unlimited = unlimitedField ? readBool(ctx, unlimitedField.value, join(path, 'unlimited')) : false;
  if (unlimited === undefined) return undefined;
  const errorsBefore = ctx.errors.length;
  if (unlimited) {
    const unitField = fields.get('unit');
    const unitText = unitField === undefined ? '' : (readString(ctx, unitField.value, join(path, 'unit')) ?? '');
    if (unitField !== undefined && unitText !== '') {
      // As envoyproxy/ratelimit: a real unit contradicts `unlimited`; anything else there is ignored.
      if ((UNITS as readonly string[]).includes(unitText.toLowerCase())) {
        ctx.error(valueNode(ctx, unitField), join(path, 'unit'), 'should not specify rate limit unit when unlimited');
      } else {
        ctx.warn(
          valueNode(ctx, unitField),
          join(path, 'unit'),
          `'${unitText}' is not a unit; ignored, as envoyproxy/ratelimit ignores it, because the limit is unlimited`,
        );
      }
    }
    for (const extension of [...UNLIMITED_CLASHES, 'calendar', 'time_zone', 'max_values', 'on_max_values'] as const) {
      const f = fields.get(extension);
      if (f !== undefined) ctx.error(f.key, join(path, extension), `'${extension}' has no meaning when unlimited`);
    }
    const predict = fields.get('predict_cost');
    if (predict !== undefined) ctx.error(predict.key, join(path, 'predict_cost'), "'predict_cost' has no meaning when unlimited");
    const rpu = fields.get('requests_per_unit');
    if (rpu !== undefined) readInt(ctx, rpu.value, join(path, 'requests_per_unit'), 0, UINT32_MAX, 0);
    const name = readName(ctx, fields, path);
    const replaces = readReplaces(ctx, fields, path);
    checkReplaces(ctx, replaces, name === undefined ? [] : [name]);
    if (ctx.errors.length > errorsBefore) return undefined;
    return { unlimited: true, limits: [], replaces: replaces.map((r) => r.name) };
  }
  const limit = readLimit(ctx, map, fields, path, defaults);
  const replaces = readReplaces(ctx, fields, path);
  checkReplaces(ctx, replaces, limit?.name === undefined ? [] : [limit.name]);
  if (limit === undefined || ctx.errors.length > errorsBefore) return undefined;
  return { unlimited: false, limits: [limit], replaces: replaces.map((r) => r.name) };
}

function readRuleList(ctx: FileContext, field: Field, path: string, defaults: LimitContext): RawRule | undefined {
  const errorsBefore = ctx.errors.length;
  const items = readMapList(ctx, field, path);
  if (items.length === 0 && ctx.errors.length === errorsBefore) {
    ctx.error(valueNode(ctx, field), path, 'must list at least one limit');
    return undefined;
  }
  const limits: RawLimit[] = [];
  const replaces: { name: string; node: Node; path: string }[] = [];
  const seen: { algorithm: AlgorithmName; windowMs: number; index: number }[] = [];
  items.forEach(({ map, path: itemPath }, index) => {
    const fields = readFields(ctx, map, itemPath, RATE_LIMIT_KEYS);
    const unlimited = fields.get('unlimited');
    if (unlimited !== undefined) {
      ctx.error(unlimited.key, join(itemPath, 'unlimited'), "'unlimited' is not allowed inside rate_limits; write rate_limit: {unlimited: true} instead");
      return;
    }
    const limit = readLimit(ctx, map, fields, itemPath, defaults, true);
    replaces.push(...readReplaces(ctx, fields, itemPath));
    if (limit === undefined) return;
    const twin = seen.find((s) => s.algorithm === limit.algorithm && s.windowMs === limit.windowMs);
    if (twin !== undefined) {
      ctx.error(map, itemPath, `duplicate limit: same algorithm and window as ${path.split('.').pop()}[${twin.index}]`);
    } else {
      seen.push({ algorithm: limit.algorithm, windowMs: limit.windowMs, index });
    }
    limits.push(limit);
  });
  checkReplaces(
    ctx,
    replaces,
    limits.flatMap((l) => (l.name === undefined ? [] : [l.name])),
  );
  if (ctx.errors.length > errorsBefore) return undefined;
  return { unlimited: false, limits, replaces: replaces.map((r) => r.name) };
}

function readName(ctx: FileContext, fields: Fields, path: string): string | undefined {
  const f = fields.get('name');
  if (f === undefined) return undefined;
  const name = readString(ctx, f.value, join(path, 'name'));
  return name === '' ? undefined : name;
}

/** One limit (the body of `rate_limit`, or one item of `rate_limits`), with file defaults applied. */
function readLimit(ctx: FileContext, map: YAMLMap, fields: Fields, path: string, defaults: LimitContext, inList = false): RawLimit | undefined {
  const errorsBefore = ctx.errors.length;
  const unitField = fields.get('unit');
  const windowField = fields.get('window');
  const unitText = unitField ? readString(ctx, unitField.value, join(path, 'unit')) : '';
  let unit: Unit | undefined;
  let windowMs = 0;
  let window: string | undefined;
  if (windowField !== undefined && unitField !== undefined) {
    ctx.error(windowField.key, join(path, 'window'), "'window' and 'unit' are mutually exclusive");
  } else if (windowField !== undefined) {
    const text = readString(ctx, windowField.value, join(path, 'window'));
    if (text !== undefined) {
      const parsed = parseWindow(text);
      if (parsed.ok) {
        windowMs = parsed.ms;
        window = text.trim();
        unit = largestDividingUnit(windowMs);
      } else {
        ctx.error(valueNode(ctx, windowField), join(path, 'window'), parsed.reason);
      }
    }
  } else if (hasCalendar(fields)) {
    // validate-calendar.ts gives the window
  } else if (unitText === '' || unitField === undefined) {
    ctx.error(unitField ? valueNode(ctx, unitField) : map, join(path, 'unit'), `missing rate limit unit: set 'unit' (one of ${UNITS.join(', ')}) or 'window'`);
  } else if (unitText !== undefined) {
    const lower = unitText.toLowerCase();
    if ((UNITS as readonly string[]).includes(lower)) {
      unit = lower as Unit;
      windowMs = UNIT_SECONDS[unit] * 1000;
    } else {
      ctx.error(valueNode(ctx, unitField), join(path, 'unit'), notOneOfMessage(unitText, UNITS));
    }
  }
  // envoyproxy/ratelimit's `unit_multiplier`: the window is that many units (5 × minute); the unit reported
  // to Envoy stays the configured one, as the reference reports it.
  const multiplierField = fields.get('unit_multiplier');
  if (multiplierField !== undefined) {
    const multiplierPath = join(path, 'unit_multiplier');
    if (windowField !== undefined) {
      ctx.error(multiplierField.key, multiplierPath, "'unit_multiplier' goes with 'unit', not with 'window'");
    } else {
      const multiplier = readInt(ctx, multiplierField.value, multiplierPath, 0, UINT32_MAX, undefined);
      if (multiplier === 0) ctx.error(valueNode(ctx, multiplierField), multiplierPath, 'unit_multiplier must be at least 1');
      else if (multiplier !== undefined) windowMs *= multiplier;
    }
  }

  const rpuField = fields.get('requests_per_unit');
  // envoyproxy/ratelimit reads an omitted requests_per_unit as 0 and so rejects every request without a word;
  // here it must be written (`requests_per_unit: 0` still blocks on purpose).
  // (A capacity limit says the same in its own words: validate-capacity-rule.ts.)
  if (rpuField === undefined && !fields.has('capacity')) {
    ctx.error(
      map,
      join(path, 'requests_per_unit'),
      'requests_per_unit is missing: without it the limit is 0 and rejects every request (as envoyproxy/ratelimit reads it); write requests_per_unit: 0 to block on purpose, or unlimited: true for no limit',
    );
  }
  const requestsPerUnit = rpuField ? readInt(ctx, rpuField.value, join(path, 'requests_per_unit'), 0, UINT32_MAX, 0) : 0;
  const softField = fields.get('soft_requests_per_unit');
  const softRequestsPerUnit = softField ? readInt(ctx, softField.value, join(path, 'soft_requests_per_unit'), 0, UINT32_MAX, 0) : 0;
  if (softField && softRequestsPerUnit !== undefined && requestsPerUnit !== undefined && softRequestsPerUnit > 0 && softRequestsPerUnit >= requestsPerUnit) {
    ctx.error(
      valueNode(ctx, softField),
      join(path, 'soft_requests_per_unit'),
      `soft_requests_per_unit (${softRequestsPerUnit}) must be below requests_per_unit (${requestsPerUnit})`,
    );
  }
  const name = readName(ctx, fields, path);
  const algorithm = readAlgorithm(ctx, fields.get('algorithm'), join(path, 'algorithm')) ?? defaults.algorithm;
  const effective: AlgorithmName = algorithm ?? 'fixed_window';
  const burstField = fields.get('burst');
  let burst: number | undefined;
  if (burstField !== undefined) {
    if (!BURST_ALGORITHMS.includes(effective)) {
      ctx.error(burstField.key, join(path, 'burst'), `burst applies only to token_bucket and leaky_bucket, not ${effective}`);
    } else {
      burst = readInt(ctx, burstField.value, join(path, 'burst'), 1, UINT32_MAX, undefined);
    }
  }
  const onLimit = readOnLimit(ctx, fields.get('on_limit'), join(path, 'on_limit'), effective);
  const throttling = readThrottlingFields(ctx, fields, path, effective, requestsPerUnit);
  checkBesideDegrade(ctx, fields, path, onLimit?.action, throttling);
  const lease = readLease(ctx, fields.get('lease'), path, effective, requestsPerUnit ?? 0);
  if (lease !== undefined) checkBesideLease(ctx, fields, path, { ...(onLimit !== undefined ? { onLimit } : {}), ...throttling });
  const countEveryHit = readCountEveryHit(ctx, fields, path, effective, {
    ...(onLimit !== undefined ? { onLimit } : {}),
    ...throttling,
    leased: fields.has('lease'),
  });
  const capacity = readCapacityRule(ctx, fields, path, requestsPerUnit);
  const predictCost = readPredictCost(ctx, fields.get('predict_cost'), path, {
    algorithm: effective,
    requestsPerUnit,
    inList,
    clashes: [
      ...(fields.has('lease') ? ['lease'] : []),
      ...(throttling.throttling?.mode === 'elastic' ? ['elastic throttling'] : []),
      ...(onLimit?.action === 'delay' || onLimit?.action === 'degrade' ? [`on_limit action '${onLimit.action}'`] : []),
      ...(fields.has('capacity') ? ['capacity'] : []),
    ],
  });
  const calendar = readCalendar(ctx, fields, path, effective, throttling.throttling?.mode === 'elastic');
  if (calendar !== undefined) ({ windowMs, unit } = calendar);
  const maxValues = readMaxValues(ctx, fields, path, { perClientValue: defaults.perClientValue ?? true, elastic: throttling.throttling?.mode === 'elastic' });
  if (ctx.errors.length > errorsBefore || requestsPerUnit === undefined) return undefined;
  const fallbackBurst =
    effective === 'token_bucket' ? (defaults.burst ?? Math.max(1, requestsPerUnit)) : effective === 'leaky_bucket' ? (defaults.burst ?? 1) : requestsPerUnit;
  // The algorithms are exact only within PARAM_BOUNDS (e.g. a window of at most ~397 days); say so here,
  // at the limit, rather than decide imprecisely later.
  const bounds = paramsError(effective, { limit: requestsPerUnit, windowMs, burst: burst ?? fallbackBurst });
  if (bounds !== undefined) {
    const field = /^window/.test(bounds) ? 'window' : /^burst/.test(bounds) ? 'burst' : undefined;
    const at = field === undefined ? undefined : fields.get(field);
    ctx.error(at !== undefined ? valueNode(ctx, at) : map, at !== undefined && field !== undefined ? join(path, field) : path, bounds);
    return undefined;
  }
  return {
    ...(name !== undefined ? { name } : {}),
    requestsPerUnit,
    windowMs,
    unit,
    ...(window !== undefined ? { window } : {}),
    algorithm: effective,
    burst: burst ?? fallbackBurst,
    softRequestsPerUnit: softRequestsPerUnit ?? 0,
    ...(onLimit !== undefined ? { onLimit } : {}),
    ...throttling,
    ...(lease !== undefined ? { lease } : {}),
    ...(countEveryHit === true ? { countEveryHit } : {}),
    ...(predictCost !== undefined ? { predictCost } : {}),
    ...(capacity !== undefined ? { capacity, algorithm: 'token_bucket' as const, burst: requestsPerUnit } : {}),
    ...(calendar !== undefined ? { calendar: calendar.calendar } : {}),
    ...(maxValues !== undefined ? { maxValues } : {}),
  };
}

function readReplaces(ctx: FileContext, fields: Fields, path: string): { name: string; node: Node; path: string }[] {
  const out: { name: string; node: Node; path: string }[] = [];
  const replacesPath = join(path, 'replaces');
  for (const item of readMapList(ctx, fields.get('replaces'), replacesPath)) {
    const itemFields = readFields(ctx, item.map, item.path, REPLACES_KEYS);
    const nameField = itemFields.get('name');
    const namePath = join(item.path, 'name');
    const name = nameField ? readString(ctx, nameField.value, namePath) : '';
    if (name === undefined) continue;
    const node = nameField ? valueNode(ctx, nameField) : item.map;
    if (name === '') ctx.error(node, namePath, 'should not have an empty replaces entry');
    else out.push({ name, node, path: namePath });
  }
  return out;
}

function checkReplaces(ctx: FileContext, replaces: readonly { name: string; node: Node; path: string }[], ownNames: readonly string[]): void {
  for (const r of replaces) {
    if (ownNames.includes(r.name)) ctx.error(r.node, r.path, 'replaces should not contain name of same descriptor');
  }
}
