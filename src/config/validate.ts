/**
 * Parse and validate one rules file: YAML text → RawFile, collecting every error it can find (it keeps going
 * after the first one) with the position and field path of the offending node. Cross-file checks (duplicate
 * domains, duplicate composite keys) belong to compile.ts.
 */
import { LineCounter, isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { Node, YAMLMap } from 'yaml';
import { ALGORITHM_NAMES, isAlgorithmName } from '../algorithms/types.js';
import type { AlgorithmName } from '../algorithms/types.js';
import { UNITS, UNIT_SECONDS, largestDividingUnit } from '../core/types.js';
import type { Unit } from '../core/types.js';
import { parseWindow } from './duration.js';
import type { ConfigError } from './errors.js';
import { isWildcard } from './glob.js';
import type { RawDescriptor, RawFile, RawLimit, RawRule } from './raw.js';
import {
  DEFAULTS_KEYS,
  DESCRIPTOR_KEYS,
  RATE_LIMIT_KEYS,
  REPLACES_KEYS,
  TOP_KEYS,
  notOneOfMessage,
  unknownKeyMessage,
} from './schema.js';
import {
  FileContext,
  describeNode,
  readBool,
  readInt,
  readString,
  scalarKind,
} from './yaml-nodes.js';

const UINT32_MAX = 4_294_967_295;
const BURST_ALGORITHMS: readonly AlgorithmName[] = ['token_bucket', 'leaky_bucket'];

interface FileDefaults {
  readonly algorithm?: AlgorithmName;
  readonly burst?: number;
}

/** The fields of one mapping, by key, after the key checks (unknown and non-string keys reported). */
type Fields = Map<string, { readonly key: Node; readonly value: unknown }>;

export function validateFile(name: string, text: string): { file: RawFile; errors: ConfigError[] } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, schema: 'failsafe', uniqueKeys: true });
  const ctx = new FileContext(name, lineCounter, doc);
  const empty: RawFile = { name, domainPosition: { line: 1, column: 1 }, descriptors: [] };

  if (doc.errors.length > 0) {
    for (const err of doc.errors) {
      const pos = err.linePos?.[0] ?? { line: 1, col: 1 };
      const firstLine = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      ctx.errorAt(pos.line, pos.col, '', `YAML syntax error: ${firstLine}`);
    }
    return { file: empty, errors: ctx.errors };
  }

  const root = ctx.deref(doc.contents);
  if (root === undefined || (isScalar(root) && scalarKind(root) === 'null')) {
    ctx.error(undefined, 'domain', 'config file cannot have empty domain');
    return { file: empty, errors: ctx.errors };
  }
  if (!isMap(root)) {
    ctx.error(root, '', `a rules file must be a mapping with 'domain' and 'descriptors', not ${describeNode(root)}`);
    return { file: empty, errors: ctx.errors };
  }

  const fields = readFields(ctx, root, '', TOP_KEYS);
  const domainField = fields.get('domain');
  let domain: string | undefined;
  if (domainField === undefined) {
    ctx.error(root, 'domain', 'config file cannot have empty domain');
  } else {
    domain = readString(ctx, domainField.value, 'domain');
    if (domain === '') {
      ctx.error(valueNode(ctx, domainField), 'domain', 'config file cannot have empty domain');
      domain = undefined;
    }
  }
  const domainPosition = ctx.position(domainField ? valueNode(ctx, domainField) : root);

  const defaults = readDefaults(ctx, fields.get('defaults'));
  const descriptors = readDescriptorList(ctx, fields.get('descriptors'), 'descriptors', defaults);
  return {
    file: { name, ...(domain !== undefined ? { domain } : {}), domainPosition, descriptors },
    errors: ctx.errors,
  };
}

/** The value node of a field, or the key node when the value is empty (so errors point at the line). */
function valueNode(ctx: FileContext, field: { key: Node; value: unknown }): Node {
  return ctx.deref(field.value) ?? field.key;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Checks the keys of a mapping (strings, known, see schema.ts) and returns its fields by name. YAML merge keys
 * (`<<: *anchor` or `<<: [*a, *b]`) are honoured as gopkg.in/yaml.v2 honours them: the mapping's own keys win,
 * then the merged mappings in order.
 */
function readFields(ctx: FileContext, map: YAMLMap, path: string, allowed: readonly string[], depth = 0): Fields {
  const fields: Fields = new Map();
  const merged: Fields[] = [];
  for (const pair of map.items) {
    const key = ctx.deref(pair.key);
    if (key === undefined || !isScalar(key)) {
      ctx.error(key ?? map, path, `key is not of type string: ${describeNode(key)}`);
      continue;
    }
    const kind = scalarKind(key);
    const text = String(key.value);
    if (kind === 'string' && text === '<<' && key.type === 'PLAIN') {
      merged.push(...readMerge(ctx, pair.value, path, allowed, depth));
      continue;
    }
    if (kind !== 'string') {
      ctx.error(key, path, `key is not of type string: ${text === '' ? 'null' : text}`);
      continue;
    }
    if (!allowed.includes(text)) {
      ctx.error(key, join(path, text), unknownKeyMessage(text, allowed));
      continue;
    }
    fields.set(text, { key, value: pair.value });
  }
  for (const m of merged) {
    for (const [k, v] of m) if (!fields.has(k)) fields.set(k, v);
  }
  return fields;
}

function readMerge(ctx: FileContext, raw: unknown, path: string, allowed: readonly string[], depth: number): Fields[] {
  const node = ctx.deref(raw);
  // Aliases cannot form cycles in valid YAML, but a bound keeps a malicious file from recursing deeply.
  if (depth > 16) {
    ctx.error(node, join(path, '<<'), 'merge keys nested too deeply');
    return [];
  }
  if (node !== undefined && isMap(node)) return [readFields(ctx, node, path, allowed, depth + 1)];
  if (node !== undefined && isSeq(node)) {
    const out: Fields[] = [];
    for (const item of node.items) {
      const m = ctx.deref(item);
      if (m !== undefined && isMap(m)) out.push(readFields(ctx, m, path, allowed, depth + 1));
      else ctx.error(m ?? node, join(path, '<<'), `can only merge mappings, not ${describeNode(m)}`);
    }
    return out;
  }
  ctx.error(node, join(path, '<<'), `can only merge mappings, not ${describeNode(node)}`);
  return [];
}

/** A list whose items must all be mappings (envoyproxy rejects any other list item). */
function readMapList(
  ctx: FileContext,
  field: { key: Node; value: unknown } | undefined,
  path: string,
): { map: YAMLMap; path: string }[] {
  if (field === undefined) return [];
  const node = ctx.deref(field.value);
  if (node === undefined || (isScalar(node) && scalarKind(node) === 'null')) return [];
  if (!isSeq(node)) {
    ctx.error(node, path, `must be a list of mappings, not ${describeNode(node)}`);
    return [];
  }
  const out: { map: YAMLMap; path: string }[] = [];
  node.items.forEach((raw, i) => {
    const itemPath = `${path}[${i}]`;
    const item = ctx.deref(raw);
    if (item === undefined) {
      ctx.error(node, itemPath, 'unknown alias');
    } else if (!isMap(item)) {
      ctx.error(item, itemPath, `list items must be mappings, not ${describeNode(item)}`);
    } else {
      out.push({ map: item, path: itemPath });
    }
  });
  return out;
}

function readMap(
  ctx: FileContext,
  field: { key: Node; value: unknown },
  path: string,
): YAMLMap | null | undefined {
  const node = ctx.deref(field.value);
  if (node === undefined || (isScalar(node) && scalarKind(node) === 'null')) return null;
  if (!isMap(node)) {
    ctx.error(node, path, `must be a mapping, not ${describeNode(node)}`);
    return undefined;
  }
  return node;
}

function readDefaults(ctx: FileContext, field: { key: Node; value: unknown } | undefined): FileDefaults {
  if (field === undefined) return {};
  const map = readMap(ctx, field, 'defaults');
  if (!map) return {};
  const fields = readFields(ctx, map, 'defaults', DEFAULTS_KEYS);
  const algorithm = readAlgorithm(ctx, fields.get('algorithm'), 'defaults.algorithm');
  const burstField = fields.get('burst');
  const burst = burstField ? readInt(ctx, burstField.value, 'defaults.burst', 1, UINT32_MAX, undefined) : undefined;
  return { ...(algorithm !== undefined ? { algorithm } : {}), ...(burst !== undefined ? { burst } : {}) };
}

function readAlgorithm(
  ctx: FileContext,
  field: { key: Node; value: unknown } | undefined,
  path: string,
): AlgorithmName | undefined {
  if (field === undefined) return undefined;
  const text = readString(ctx, field.value, path);
  if (text === undefined) return undefined;
  if (isAlgorithmName(text)) return text;
  ctx.error(valueNode(ctx, field), path, notOneOfMessage(text, ALGORITHM_NAMES));
  return undefined;
}

function readDescriptorList(
  ctx: FileContext,
  field: { key: Node; value: unknown } | undefined,
  path: string,
  defaults: FileDefaults,
): RawDescriptor[] {
  const out: RawDescriptor[] = [];
  for (const item of readMapList(ctx, field, path)) {
    const d = readDescriptor(ctx, item.map, item.path, defaults);
    if (d !== undefined) out.push(d);
  }
  return out;
}

function readDescriptor(
  ctx: FileContext,
  map: YAMLMap,
  path: string,
  defaults: FileDefaults,
): RawDescriptor | undefined {
  const fields = readFields(ctx, map, path, DESCRIPTOR_KEYS);
  const flag = (name: string): boolean => {
    const f = fields.get(name);
    return f ? (readBool(ctx, f.value, join(path, name)) ?? false) : false;
  };

  const keyField = fields.get('key');
  let key: string | undefined;
  if (keyField === undefined) {
    ctx.error(map, join(path, 'key'), 'descriptor has empty key');
  } else {
    key = readString(ctx, keyField.value, join(path, 'key'));
    if (key === '') {
      ctx.error(valueNode(ctx, keyField), join(path, 'key'), 'descriptor has empty key');
      key = undefined;
    }
  }
  const valueField = fields.get('value');
  const value = valueField ? readString(ctx, valueField.value, join(path, 'value')) : '';

  const shareThreshold = flag('share_threshold');
  if (shareThreshold && value !== undefined && !isWildcard(value)) {
    const f = fields.get('share_threshold')!;
    ctx.error(
      valueNode(ctx, f),
      join(path, 'share_threshold'),
      `share_threshold can only be used with wildcard values (containing '*'), but found key '${key ?? ''}${value === '' ? '' : `_${value}`}'`,
    );
  }

  const shadowMode = flag('shadow_mode');
  const quotaMode = flag('quota_mode');
  const detailedMetric = flag('detailed_metric');
  const valueToMetric = flag('value_to_metric');
  const rule = readRule(ctx, fields, path, defaults);
  const descriptors = readDescriptorList(ctx, fields.get('descriptors'), join(path, 'descriptors'), defaults);
  if (key === undefined || value === undefined) return undefined;
  return {
    key,
    value,
    position: ctx.position(map),
    path,
    ...(rule !== undefined ? { rule } : {}),
    shadowMode,
    quotaMode,
    detailedMetric,
    valueToMetric,
    shareThreshold,
    descriptors,
  };
}

/** `rate_limit: {...}` or `rate_limits: [...]` of one descriptor; undefined when absent or invalid. */
function readRule(ctx: FileContext, fields: Fields, path: string, defaults: FileDefaults): RawRule | undefined {
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

function readSingleRule(ctx: FileContext, map: YAMLMap, path: string, defaults: FileDefaults): RawRule | undefined {
  const fields = readFields(ctx, map, path, RATE_LIMIT_KEYS);
  const unlimitedField = fields.get('unlimited');
  const unlimited = unlimitedField ? readBool(ctx, unlimitedField.value, join(path, 'unlimited')) : false;
  if (unlimited === undefined) return undefined;
  const errorsBefore = ctx.errors.length;
  if (unlimited) {
    const unitField = fields.get('unit');
    if (unitField !== undefined && readString(ctx, unitField.value, join(path, 'unit')) !== '') {
      ctx.error(valueNode(ctx, unitField), join(path, 'unit'), 'should not specify rate limit unit when unlimited');
    }
    for (const extension of ['window', 'algorithm', 'burst'] as const) {
      const f = fields.get(extension);
      if (f !== undefined) ctx.error(f.key, join(path, extension), `'${extension}' has no meaning when unlimited`);
    }
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

function readRuleList(
  ctx: FileContext,
  field: { key: Node; value: unknown },
  path: string,
  defaults: FileDefaults,
): RawRule | undefined {
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
      ctx.error(
        unlimited.key,
        join(itemPath, 'unlimited'),
        "'unlimited' is not allowed inside rate_limits; write rate_limit: {unlimited: true} instead",
      );
      return;
    }
    const limit = readLimit(ctx, map, fields, itemPath, defaults);
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
function readLimit(
  ctx: FileContext,
  map: YAMLMap,
  fields: Fields,
  path: string,
  defaults: FileDefaults,
): RawLimit | undefined {
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
  } else if (unitText === '' || unitField === undefined) {
    ctx.error(
      unitField ? valueNode(ctx, unitField) : map,
      join(path, 'unit'),
      `missing rate limit unit: set 'unit' (one of ${UNITS.join(', ')}) or 'window'`,
    );
  } else if (unitText !== undefined) {
    const lower = unitText.toLowerCase();
    if ((UNITS as readonly string[]).includes(lower)) {
      unit = lower as Unit;
      windowMs = UNIT_SECONDS[unit] * 1000;
    } else {
      ctx.error(valueNode(ctx, unitField), join(path, 'unit'), notOneOfMessage(unitText, UNITS));
    }
  }

  const rpuField = fields.get('requests_per_unit');
  // Omitted means 0 (reject everything), as envoyproxy/ratelimit's uint32 zero value does.
  const requestsPerUnit = rpuField
    ? readInt(ctx, rpuField.value, join(path, 'requests_per_unit'), 0, UINT32_MAX, 0)
    : 0;
  const name = readName(ctx, fields, path);
  const algorithm = readAlgorithm(ctx, fields.get('algorithm'), join(path, 'algorithm')) ?? defaults.algorithm;
  const effective: AlgorithmName = algorithm ?? 'fixed_window';
  const burstField = fields.get('burst');
  let burst: number | undefined;
  if (burstField !== undefined) {
    if (!BURST_ALGORITHMS.includes(effective)) {
      ctx.error(
        burstField.key,
        join(path, 'burst'),
        `burst applies only to token_bucket and leaky_bucket, not ${effective}`,
      );
    } else {
      burst = readInt(ctx, burstField.value, join(path, 'burst'), 1, UINT32_MAX, undefined);
    }
  }
  if (ctx.errors.length > errorsBefore || requestsPerUnit === undefined) return undefined;
  const fallbackBurst =
    effective === 'token_bucket'
      ? (defaults.burst ?? requestsPerUnit)
      : effective === 'leaky_bucket'
        ? (defaults.burst ?? 1)
        : requestsPerUnit;
  return {
    ...(name !== undefined ? { name } : {}),
    requestsPerUnit,
    windowMs,
    unit,
    ...(window !== undefined ? { window } : {}),
    algorithm: effective,
    burst: burst ?? fallbackBurst,
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

function checkReplaces(
  ctx: FileContext,
  replaces: readonly { name: string; node: Node; path: string }[],
  ownNames: readonly string[],
): void {
  for (const r of replaces) {
    if (ownNames.includes(r.name)) ctx.error(r.node, r.path, 'replaces should not contain name of same descriptor');
  }
}
