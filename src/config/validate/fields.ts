/**
 * Reading mappings and lists of a rules file: key checks (see schema.ts), merge keys, and the shapes every
 * section shares. Errors go to the FileContext; callers get what could be read.
 */
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Node, YAMLMap } from 'yaml';
import { REFERENCE_KEYS, ignoredKeyMessage, unknownKeyMessage } from './schema.js';
import type { FileContext } from './yaml-nodes.js';
import { describeNode, scalarKind } from './yaml-nodes.js';

/** One field of a mapping: its key node and its (not yet dereferenced) value. */
export interface Field {
  readonly key: Node;
  readonly value: unknown;
}

/** The fields of one mapping, by key, after the key checks (unknown and non-string keys reported). */
export type Fields = Map<string, Field>;

/** The value node of a field, or the key node when the value is empty (so errors point at the line). */
export function valueNode(ctx: FileContext, field: Field): Node {
  return ctx.deref(field.value) ?? field.key;
}

export function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Checks the keys of a mapping (strings, known, see schema.ts) and returns its fields by name. YAML merge keys
 * (`<<: *anchor` or `<<: [*a, *b]`) are honoured as gopkg.in/yaml.v2 honours them: the mapping's own keys win,
 * then the merged mappings in order.
 */
export function readFields(ctx: FileContext, map: YAMLMap, path: string, allowed: readonly string[], depth = 0, reference = true): Fields {
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
      merged.push(...readMerge(ctx, pair.value, path, allowed, depth, reference));
      continue;
    }
    if (kind !== 'string') {
      ctx.error(key, path, `key is not of type string: ${text === '' ? 'null' : text}`);
      continue;
    }
    if (!allowed.includes(text)) {
      if (reference && REFERENCE_KEYS.has(text)) ctx.warn(key, join(path, text), ignoredKeyMessage(text));
      else ctx.error(key, join(path, text), unknownKeyMessage(text, allowed));
      continue;
    }
    // gopkg.in/yaml.v2, which envoyproxy/ratelimit reads rules with, keeps the last of duplicate keys.
    const earlier = fields.get(text);
    if (earlier !== undefined) {
      const { line } = ctx.position(earlier.key);
      ctx.warn(key, join(path, text), `duplicate key '${text}' (also on line ${line}): the last one is used, as envoyproxy/ratelimit uses it`);
    }
    fields.set(text, { key, value: pair.value });
  }
  for (const m of merged) {
    for (const [k, v] of m) if (!fields.has(k)) fields.set(k, v);
  }
  return fields;
}

export function readMerge(ctx: FileContext, raw: unknown, path: string, allowed: readonly string[], depth: number, reference = true): Fields[] {
  const node = ctx.deref(raw);
  // Aliases cannot form cycles in valid YAML, but a bound keeps a malicious file from recursing deeply.
  if (depth > 16) {
    ctx.error(node, join(path, '<<'), 'merge keys nested too deeply');
    return [];
  }
  if (node !== undefined && isMap(node)) return [readFields(ctx, node, path, allowed, depth + 1, reference)];
  if (node !== undefined && isSeq(node)) {
    const out: Fields[] = [];
    for (const item of node.items) {
      const m = ctx.deref(item);
      if (m !== undefined && isMap(m)) out.push(readFields(ctx, m, path, allowed, depth + 1, reference));
      else ctx.error(m ?? node, join(path, '<<'), `can only merge mappings, not ${describeNode(m)}`);
    }
    return out;
  }
  ctx.error(node, join(path, '<<'), `can only merge mappings, not ${describeNode(node)}`);
  return [];
}

/** A list whose items must all be mappings (envoyproxy rejects any other list item). */
export function readMapList(ctx: FileContext, field: Field | undefined, path: string): { map: YAMLMap; path: string }[] {
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
      if (!isAlias(raw)) ctx.error(node, itemPath, 'unknown alias'); // an unknown alias is reported once, by FileContext
    } else if (!isMap(item)) {
      ctx.error(item, itemPath, `list items must be mappings, not ${describeNode(item)}`);
    } else {
      out.push({ map: item, path: itemPath });
    }
  });
  return out;
}

export function readMap(ctx: FileContext, field: Field, path: string): YAMLMap | null | undefined {
  const node = ctx.deref(field.value);
  if (node === undefined || (isScalar(node) && scalarKind(node) === 'null')) return null;
  if (!isMap(node)) {
    ctx.error(node, path, `must be a mapping, not ${describeNode(node)}`);
    return undefined;
  }
  return node;
}
