/**
 * Reading the YAML AST the way envoyproxy/ratelimit's decoder (gopkg.in/yaml.v2) reads the same text, while
 * keeping every node's position for error messages.
 *
 * We parse with the `failsafe` schema, so every scalar arrives as its source text, and resolve plain scalars
 * ourselves with YAML 1.1 rules, as yaml.v2 does. That matters for compatibility:
 * - a string field takes the scalar's text whatever it looks like (`value: 200`, `value: 1.0`, `value: on` are the
 *   strings "200", "1.0", "on"), and null (`~`, `null`, empty) reads as the empty string;
 * - booleans are the YAML 1.1 set (`true`, `yes`, `on`, `y`... in their three spellings); a quoted "true" is a string;
 * - integers may be written 0x1F, 0o17, 017 (octal!), 1_000; a quoted "100" is a string, not a number;
 * - a mapping key that resolves to a number, boolean or null is "not of type string".
 */
import { isAlias, isMap, isScalar, isSeq } from 'yaml';
import type { Document, LineCounter, Node, Scalar } from 'yaml';
import { AliasTable } from './aliases.js';
import { ConfigError } from '../config-error.js';
import { nestedMetadataKey } from './metadata-keys.js';
import type { ConfigLimits } from '../limits.js';

/** Collects the errors of one file; the position of a node comes from its source range. */
export class FileContext {
  readonly errors: ConfigError[] = [];
  /** Problems that do not stop the file from loading (see readFields: keys envoyproxy/ratelimit ignores). */
  readonly warnings: ConfigError[] = [];
  private readonly aliases: AliasTable;
  /** Throws LimitExceeded when the document nests too deeply. */
  constructor(
    readonly file: string,
    private readonly lineCounter: LineCounter,
    doc: Document,
    readonly limits: ConfigLimits,
  ) {
    this.aliases = new AliasTable(doc, limits);
    for (const alias of this.aliases.unknown) {
      this.error(alias, '', `unknown alias '*${alias.source}': no anchor '&${alias.source}' completed before it`);
    }
  }

  position(node: Node | null | undefined): { line: number; column: number } {
    return this.positionAt(node?.range?.[0] ?? 0);
  }

  positionAt(offset: number): { line: number; column: number } {
    const { line, col } = this.lineCounter.linePos(offset);
    return { line, column: col };
  }

  error(node: Node | null | undefined, path: string, reason: string): void {
    const { line, column } = this.position(node);
    this.errorAt(line, column, path, reason);
  }

  warn(node: Node | null | undefined, path: string, reason: string): void {
    const { line, column } = this.position(node);
    this.warnings.push(new ConfigError({ file: this.file, line, column, path, reason }));
  }

  errorAt(line: number, column: number, path: string, reason: string): void {
    this.errors.push(new ConfigError({ file: this.file, line, column, path, reason }));
  }

  /**
   * Follows an alias to the node it names; undefined for an unknown anchor (already reported, once, by the
   * constructor). Throws
   * LimitExceeded when the file's aliases have expanded to too many nodes (see aliases.ts).
   */
  deref(node: unknown): Node | undefined {
    if (isAlias(node)) return this.aliases.resolve(node);
    return (node as Node | null | undefined) ?? undefined;
  }
}

export type PlainKind = 'null' | 'bool' | 'int' | 'float' | 'string';

const NULLS = new Set(['', '~', 'null', 'Null', 'NULL']);
const TRUES = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSES = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);
const INT = /^[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|0|[1-9][0-9_]*)$/;
const FLOAT = /^([-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$/;

/** What a scalar resolves to under YAML 1.1 (quoted and block scalars are always strings). */
export function scalarKind(node: Scalar): PlainKind {
  if (node.type !== 'PLAIN') return 'string';
  const text = String(node.value);
  if (NULLS.has(text)) return 'null';
  if (TRUES.has(text) || FALSES.has(text)) return 'bool';
  if (INT.test(text)) return 'int';
  if (FLOAT.test(text)) return 'float';
  return 'string';
}

/** The value of a YAML 1.1 integer literal, or undefined when it is not one (or not a safe integer). */
export function parseYamlInt(text: string): number | undefined {
  if (!INT.test(text)) return undefined;
  let t = text.replaceAll('_', '');
  let sign = 1;
  if (t.startsWith('-') || t.startsWith('+')) {
    if (t.startsWith('-')) sign = -1;
    t = t.slice(1);
  }
  let value: number;
  if (t.startsWith('0b')) value = parseInt(t.slice(2), 2);
  else if (t.startsWith('0x')) value = parseInt(t.slice(2), 16);
  else if (t.startsWith('0o')) value = parseInt(t.slice(2), 8);
  else if (t.length > 1 && t.startsWith('0')) value = parseInt(t.slice(1), 8);
  else value = parseInt(t, 10);
  if (!Number.isSafeInteger(value)) return undefined;
  return sign * value;
}

/** How a node is described in messages: `a mapping`, `a list`, `the number 3`, `the string 'x'`. */
export function describeNode(node: Node | undefined): string {
  if (node === undefined) return 'nothing';
  if (isMap(node)) return 'a mapping';
  if (isSeq(node)) return 'a list';
  if (isScalar(node)) {
    const text = String(node.value);
    switch (scalarKind(node)) {
      case 'null':
        return 'null';
      case 'bool':
        return `the boolean ${text}`;
      case 'int':
      case 'float':
        return `the number ${text}`;
      default:
        return `the string '${text}'`;
    }
  }
  return 'an unsupported node';
}

/** A string field: any scalar's text; null reads as ''. Collections are an error (undefined returned). */
export function readString(ctx: FileContext, raw: unknown, path: string): string | undefined {
  const node = ctx.deref(raw);
  if (node === undefined) return '';
  if (isScalar(node)) return scalarKind(node) === 'null' ? '' : String(node.value);
  ctx.error(node, path, `must be a string, not ${describeNode(node)}`);
  return undefined;
}

/** A boolean field (YAML 1.1 booleans; null reads as false, as in yaml.v2). */
export function readBool(ctx: FileContext, raw: unknown, path: string): boolean | undefined {
  const node = ctx.deref(raw);
  if (node === undefined) return false;
  if (isScalar(node)) {
    const kind = scalarKind(node);
    if (kind === 'null') return false;
    if (kind === 'bool') return TRUES.has(String(node.value));
  }
  ctx.error(node, path, `must be true or false, not ${describeNode(node)}`);
  return undefined;
}

/** An integer field within [min, max]; null reads as `nullValue` (yaml.v2 zero value) when given. */
export function readInt(ctx: FileContext, raw: unknown, path: string, min: number, max: number, nullValue: number | undefined): number | undefined {
  const node = ctx.deref(raw);
  const range = `an integer from ${min} to ${max}`;
  if (node === undefined || (isScalar(node) && scalarKind(node) === 'null')) {
    if (nullValue !== undefined) return nullValue;
    ctx.error(node, path, `must be ${range}, not null`);
    return undefined;
  }
  if (isScalar(node) && scalarKind(node) === 'int') {
    const value = parseYamlInt(String(node.value));
    if (value !== undefined && value >= min && value <= max) return value;
    ctx.error(node, path, `must be ${range}, not ${String(node.value)}`);
    return undefined;
  }
  ctx.error(node, path, `must be ${range}, not ${describeNode(node)}`);
  return undefined;
}

export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * A free-form value (descriptor `metadata`) as frozen JSON: scalars resolved with the YAML 1.1 rules above,
 * mappings with string keys only. Undefined (and an error) for anything that cannot be JSON.
 */
export function readJson(ctx: FileContext, raw: unknown, path: string, depth = 0): JsonValue | undefined {
  const node = ctx.deref(raw);
  if (depth > 32) {
    ctx.error(node, path, 'nested too deeply');
    return undefined;
  }
  if (node === undefined) return null;
  if (isScalar(node)) {
    const text = String(node.value);
    switch (scalarKind(node)) {
      case 'null':
        return null;
      case 'bool':
        return TRUES.has(text);
      case 'int':
        return parseYamlInt(text) ?? Number(text.replaceAll('_', ''));
      case 'float': {
        const n = Number(text.replaceAll('_', ''));
        if (Number.isFinite(n)) return n;
        ctx.error(node, path, `${text} cannot be represented in JSON`);
        return undefined;
      }
      default:
        return text;
    }
  }
  if (isSeq(node)) {
    const items: JsonValue[] = [];
    node.items.forEach((item, i) => {
      const v = readJson(ctx, item, `${path}[${i}]`, depth + 1);
      if (v !== undefined) items.push(v);
    });
    return Object.freeze(items);
  }
  if (isMap(node)) {
    const out: Record<string, JsonValue> = {};
    for (const pair of node.items) {
      const key = ctx.deref(pair.key);
      // envoyproxy/ratelimit (gopkg.in/yaml.v2) accepts numbers and booleans as metadata keys; so do we, as
      // written (`404: not_found` is the key "404"). A null or collection key cannot be a JSON key.
      // Nested keys are named as the reference names them (metadata-keys.ts): `on:` there is "true".
      if (key === undefined || !isScalar(key) || (depth === 0 && scalarKind(key) === 'null')) {
        ctx.error(key ?? node, path, `metadata keys must be strings, not ${describeNode(key)}`);
        continue;
      }
      const name = depth === 0 ? String(key.value) : nestedMetadataKey(String(key.value), scalarKind(key));
      const v = readJson(ctx, pair.value, `${path}.${name}`, depth + 1);
      // an own property whatever the name (`__proto__` included)
      if (v !== undefined) Object.defineProperty(out, name, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return Object.freeze(out);
  }
  ctx.error(node, path, `unsupported value: ${describeNode(node)}`);
  return undefined;
}
