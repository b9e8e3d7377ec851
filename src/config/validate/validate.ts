/**
 * Parse and validate one rules file: YAML text → RawFile, collecting every error it can find (it keeps going
 * after the first one) with the position and field path of the offending node. Cross-file checks (duplicate
 * domains, duplicate composite keys) belong to compile.ts.
 */
import { LineCounter, isMap, isScalar, parseAllDocuments, parseDocument } from 'yaml';
import type { Document, YAMLMap } from 'yaml';
import { ConfigError } from '../config-error.js';
import { tooLargeError } from '../load/file-policy.js';
import { parseJsonDocument } from '../load/json-document.js';
import { join, readFields, readMap, readMapList, valueNode } from './fields.js';
import type { Field } from './fields.js';
import { isKeyPattern, isWildcard } from '../load/glob.js';
import { DEFAULT_LIMITS, LimitExceeded } from '../limits.js';
import type { ConfigLimits } from '../limits.js';
import type { RawDescriptor, RawFile } from '../raw.js';
import { DEFAULTS_KEYS, DESCRIPTOR_KEYS, TOP_KEYS } from './schema.js';
import { UINT32_MAX, readAlgorithm, readRule } from './validate-limits.js';
import { readAuthz } from './validate-authz.js';
import { readValidity } from './validate-validity.js';
import type { FileDefaults } from './validate-limits.js';
import { FileContext, describeNode, readBool, readInt, readJson, readString, scalarKind } from './yaml-nodes.js';
import type { JsonValue } from './yaml-nodes.js';

type Validated = { file: RawFile; errors: ConfigError[]; warnings: ConfigError[] };

export function validateFile(name: string, text: string, limits: ConfigLimits = DEFAULT_LIMITS): Validated {
  const empty: RawFile = { name, domainPosition: { line: 1, column: 1 }, descriptors: [] };
  const bytes = Buffer.byteLength(text);
  if (bytes > limits.maxFileBytes) return { file: empty, errors: [tooLargeError(name, bytes, limits.maxFileBytes)], warnings: [] };
  const json = parseJsonDocument(text);
  const lineCounter = json?.lineCounter ?? new LineCounter();
  let doc: Document;
  const later: Document[] = [];
  try {
    const docs = json !== undefined ? [json.doc] : parseAllDocuments(text, { lineCounter, schema: 'failsafe', uniqueKeys: false });
    if (Array.isArray(docs) && docs.length > 0) {
      doc = docs[0]!;
      later.push(...docs.slice(1));
    } else {
      doc = parseDocument(text, { lineCounter, schema: 'failsafe', uniqueKeys: false });
    }
  } catch (err) {
    // The parser recursing too deeply on hostile nesting is the only throw we know of; never crash on it.
    const reason = `YAML cannot be parsed: ${err instanceof Error ? err.message : String(err)}`;
    return { file: empty, errors: [new ConfigError({ file: name, line: 1, column: 1, path: '', reason })], warnings: [] };
  }
  let ctx: FileContext | undefined;
  try {
    ctx = new FileContext(name, lineCounter, doc, limits);
    return validateDocument(ctx, doc, later, empty);
  } catch (err) {
    if (!(err instanceof LimitExceeded) && !(err instanceof RangeError)) throw err;
    const at = err instanceof LimitExceeded ? err.offset : 0;
    const { line, col } = lineCounter.linePos(at);
    const reason = err instanceof LimitExceeded ? err.reason : `nested too deeply to validate (${err.message})`;
    const errors = [...(ctx?.errors ?? []), new ConfigError({ file: name, line, column: col, path: '', reason })];
    return { file: empty, errors, warnings: ctx?.warnings ?? [] };
  }
}

function validateDocument(ctx: FileContext, doc: Document, later: readonly Document[], empty: RawFile): Validated {
  const name = ctx.file;
  if (doc.errors.length > 0) {
    for (const err of doc.errors) {
      const pos = err.linePos?.[0] ?? { line: 1, col: 1 };
      const firstLine = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      ctx.errorAt(pos.line, pos.col, '', `YAML syntax error: ${firstLine}`);
    }
    return { file: empty, errors: ctx.errors, warnings: ctx.warnings };
  }
  const ignored = later.filter((d) => d.contents !== null || d.errors.length > 0);
  if (ignored.length > 0) {
    const { line, column } = ctx.positionAt(ignored[0]!.range?.[0] ?? 0);
    ctx.warnings.push(
      new ConfigError({
        file: name,
        line,
        column,
        path: '',
        reason: `only the first YAML document of a file is read; the ${ignored.length === 1 ? 'document' : `${ignored.length} documents`} after it ${ignored.length === 1 ? 'is' : 'are'} ignored, as envoyproxy/ratelimit ignores them`,
      }),
    );
  }

  const root = ctx.deref(doc.contents);
  if (root === undefined || (isScalar(root) && scalarKind(root) === 'null')) {
    ctx.error(undefined, 'domain', 'config file cannot have empty domain');
    return { file: empty, errors: ctx.errors, warnings: ctx.warnings };
  }
  if (!isMap(root)) {
    ctx.error(root, '', `a rules file must be a mapping with 'domain' and 'descriptors', not ${describeNode(root)}`);
    return { file: empty, errors: ctx.errors, warnings: ctx.warnings };
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
  const descriptors = readDescriptorList(ctx, fields.get('descriptors'), 'descriptors', defaults, 1);
  const authz = readAuthz(ctx, fields.get('authz'));
  const validity = readValidity(ctx, fields, '');
  return {
    file: {
      name,
      ...(domain !== undefined ? { domain } : {}),
      domainPosition,
      descriptors,
      ...(authz !== undefined ? { authz } : {}),
      ...(validity !== undefined ? { validity } : {}),
    },
    errors: ctx.errors,
    warnings: ctx.warnings,
  };
}

function readDefaults(ctx: FileContext, field: Field | undefined): FileDefaults {
  if (field === undefined) return {};
  const map = readMap(ctx, field, 'defaults');
  if (!map) return {};
  const fields = readFields(ctx, map, 'defaults', DEFAULTS_KEYS);
  const algorithm = readAlgorithm(ctx, fields.get('algorithm'), 'defaults.algorithm');
  const burstField = fields.get('burst');
  const burst = burstField ? readInt(ctx, burstField.value, 'defaults.burst', 1, UINT32_MAX, undefined) : undefined;
  return { ...(algorithm !== undefined ? { algorithm } : {}), ...(burst !== undefined ? { burst } : {}) };
}

/** `openAbove`: a descriptor above takes its value from the request (its counters are per client value). */
function readDescriptorList(
  ctx: FileContext,
  field: Field | undefined,
  path: string,
  defaults: FileDefaults,
  depth: number,
  openAbove = false,
): RawDescriptor[] {
  const out: RawDescriptor[] = [];
  if (field !== undefined && depth > ctx.limits.maxDescriptorDepth) {
    ctx.error(valueNode(ctx, field), path, `descriptors nested more than ${ctx.limits.maxDescriptorDepth} levels deep`);
    return out;
  }
  for (const item of readMapList(ctx, field, path)) {
    const d = readDescriptor(ctx, item.map, item.path, defaults, depth, openAbove);
    if (d !== undefined) out.push(d);
  }
  return out;
}

function readDescriptor(ctx: FileContext, map: YAMLMap, path: string, defaults: FileDefaults, depth: number, openAbove: boolean): RawDescriptor | undefined {
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
    const name = `${key ?? ''}${value === '' ? '' : `_${value}`}`;
    if (!name.includes('*')) {
      ctx.error(
        valueNode(ctx, f),
        join(path, 'share_threshold'),
        `share_threshold can only be used with wildcard values (containing '*'), but found key '${name}'`,
      );
    } else if (key === undefined || !isKeyPattern(key)) {
      // envoyproxy/ratelimit only checks that the name `key_value` has a '*'; a '*' inside a key matches nothing.
      ctx.warn(
        valueNode(ctx, f),
        join(path, 'share_threshold'),
        `share_threshold has no effect on '${name}' (only a value with '*' or a key ending in '*' is a wildcard) and is ignored, as envoyproxy/ratelimit ignores it`,
      );
    }
  }

  const shadowMode = flag('shadow_mode');
  const quotaMode = flag('quota_mode');
  const detailedMetric = flag('detailed_metric');
  const valueToMetric = flag('value_to_metric');
  const metadata = readMetadata(ctx, fields.get('metadata'), join(path, 'metadata'));
  // The request chooses the value: no `value`, a wildcard value (unless shared) or a key pattern.
  const open = openAbove || value === '' || (value !== undefined && isWildcard(value) && !shareThreshold) || (key !== undefined && isKeyPattern(key));
  const rule = readRule(ctx, fields, path, { ...defaults, perClientValue: open });
  const validity = readValidity(ctx, fields, path);
  const descriptors = readDescriptorList(ctx, fields.get('descriptors'), join(path, 'descriptors'), defaults, depth + 1, open);
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
    ...(metadata !== undefined ? { metadata } : {}),
    ...(validity !== undefined ? { validity } : {}),
    descriptors,
  };
}

/** `metadata:` must be a mapping (or empty); its content is free-form and passed through as JSON. */
function readMetadata(ctx: FileContext, field: Field | undefined, path: string): { readonly [key: string]: JsonValue } | undefined {
  if (field === undefined) return undefined;
  const node = ctx.deref(field.value);
  if (node === undefined || (isScalar(node) && scalarKind(node) === 'null')) return undefined;
  if (!isMap(node)) {
    ctx.error(node, path, `must be a mapping, not ${describeNode(node)}`);
    return undefined;
  }
  return readJson(ctx, node, path) as { readonly [key: string]: JsonValue } | undefined;
}
