/**
 * Validation of a rules file's `authz:` block: `rate_limits: [{actions: [...]}]` written as in an
 * Envoy route, with Envoy's action names, fields and defaults, plus cookie, method, path, host and region.
 * Every error names the field path; keys are checked strictly (envoyproxy/ratelimit never reads this block).
 */
import { isScalar, isSeq } from 'yaml';
import type { YAMLMap } from 'yaml';
import { DEFAULT_REQUEST_LIMITS } from '../../vocab/request-limits.js';
import type { RawAuthz, RawAuthzAction } from '../authz-types.js';
import { join, readMap, readMapList, valueNode } from './fields.js';
import type { Field } from './fields.js';
import { readHeaderMatcher, readMatchers, readQueryMatcher, strictFields } from './validate-authz-matchers.js';
import { closest } from './schema.js';
import { describeNode, readBool, readInt, readString } from './yaml-nodes.js';
import type { FileContext } from './yaml-nodes.js';

export const AUTHZ_KEYS = ['rate_limits'] as const;
const RATE_LIMIT_ITEM_KEYS = ['actions'];

/** Each action's fields (Envoy's names for Envoy's actions). */
const ACTION_FIELDS: Readonly<Record<RawAuthzAction['type'], readonly string[]>> = {
  remote_address: [],
  masked_remote_address: ['v4_prefix_mask_len', 'v6_prefix_mask_len'],
  request_headers: ['header_name', 'descriptor_key', 'skip_if_absent'],
  query_parameters: ['query_parameter_name', 'descriptor_key', 'skip_if_absent'],
  generic_key: ['descriptor_value', 'descriptor_key'],
  header_value_match: ['descriptor_value', 'descriptor_key', 'expect_match', 'headers'],
  query_parameter_value_match: ['descriptor_value', 'descriptor_key', 'expect_match', 'query_parameters'],
  cookie: ['name', 'descriptor_key', 'skip_if_absent'],
  method: ['descriptor_key'],
  path: ['descriptor_key', 'strip_query'],
  host: ['descriptor_key'],
  region: ['descriptor_key', 'headers', 'geoip', 'skip_if_absent'],
};
export const ACTION_NAMES = Object.keys(ACTION_FIELDS) as RawAuthzAction['type'][];

/** Reads `authz:`; undefined when absent or empty (errors reported to ctx). */
export function readAuthz(ctx: FileContext, field: Field | undefined): RawAuthz | undefined {
  if (field === undefined) return undefined;
  const map = readMap(ctx, field, 'authz');
  if (!map) return undefined;
  const fields = strictFields(ctx, map, 'authz', AUTHZ_KEYS);
  const listField = fields.get('rate_limits');
  if (listField === undefined) {
    ctx.error(map, 'authz.rate_limits', 'is required: the list of {actions: [...]} that build the descriptors');
    return undefined;
  }
  const list = readMapList(ctx, listField, 'authz.rate_limits');
  // Each item is a descriptor of every request: more than a request may carry would fail every Check.
  if (list.length > DEFAULT_REQUEST_LIMITS.maxDescriptors) {
    ctx.error(
      valueNode(ctx, listField),
      'authz.rate_limits',
      `has ${list.length} items; a request carries at most ${DEFAULT_REQUEST_LIMITS.maxDescriptors} descriptors (MAX_REQUEST_DESCRIPTORS)`,
    );
  }
  const rateLimits = list.map(({ map: item, path }) => {
    const itemFields = strictFields(ctx, item, path, RATE_LIMIT_ITEM_KEYS);
    const actionsField = itemFields.get('actions');
    const actionsPath = join(path, 'actions');
    const items = readMapList(ctx, actionsField, actionsPath);
    if (actionsField === undefined) ctx.error(item, actionsPath, 'is required: a list of at least one action');
    else if (!hasItems(ctx, actionsField)) ctx.error(valueNode(ctx, actionsField), actionsPath, 'must list at least one action');
    else if (items.length > DEFAULT_REQUEST_LIMITS.maxEntries) {
      ctx.error(
        valueNode(ctx, actionsField),
        actionsPath,
        `has ${items.length} actions; a descriptor carries at most ${DEFAULT_REQUEST_LIMITS.maxEntries} entries (MAX_DESCRIPTOR_ENTRIES)`,
      );
    }
    const actions = items.map((a) => readAction(ctx, a.map, a.path)).filter((a): a is RawAuthzAction => a !== undefined);
    return { actions };
  });
  const { line, column } = ctx.position(field.key);
  return { rateLimits, source: `${ctx.file}:${line}`, line, column };
}

function hasItems(ctx: FileContext, field: Field): boolean {
  const node = ctx.deref(field.value);
  return node !== undefined && isSeq(node) && node.items.length > 0;
}

function readAction(ctx: FileContext, map: YAMLMap, path: string): RawAuthzAction | undefined {
  if (map.items.length !== 1) {
    const names = map.items.map((p) => {
      const k = ctx.deref(p.key);
      return k !== undefined && isScalar(k) ? String(k.value) : '?';
    });
    ctx.error(map, path, `an action has exactly one of ${ACTION_NAMES.join(', ')}; found ${names.length === 0 ? 'none' : names.join(', ')}`);
    return undefined;
  }
  const pair = map.items[0]!;
  const keyNode = ctx.deref(pair.key);
  const name = keyNode !== undefined && isScalar(keyNode) ? String(keyNode.value) : '';
  if (!(ACTION_NAMES as string[]).includes(name)) {
    const near = closest(name, ACTION_NAMES);
    ctx.error(keyNode ?? map, join(path, name), `unknown action '${name}'${near ? ` (did you mean '${near}'?)` : `; actions: ${ACTION_NAMES.join(', ')}`}`);
    return undefined;
  }
  const type = name as RawAuthzAction['type'];
  const apath = join(path, type);
  const body = readMap(ctx, { key: keyNode!, value: pair.value }, apath);
  if (body === undefined) return undefined;
  const f = body === null ? new Map<string, Field>() : strictFields(ctx, body, apath, ACTION_FIELDS[type]);
  const at = body ?? keyNode!;
  const str = (k: string, def?: string): string | undefined => {
    const field = f.get(k);
    if (field === undefined) {
      if (def === undefined) ctx.error(at, join(apath, k), 'is required');
      return def;
    }
    const s = readString(ctx, field.value, join(apath, k));
    if (s === '' && def === undefined) {
      ctx.error(valueNode(ctx, field), join(apath, k), 'must not be empty');
      return undefined;
    }
    return s === '' ? def : s;
  };
  const bool = (k: string, def: boolean): boolean => {
    const field = f.get(k);
    return field === undefined ? def : (readBool(ctx, field.value, join(apath, k)) ?? def);
  };
  const key = (def: string) => str('descriptor_key', def) ?? def;
  switch (type) {
    case 'remote_address':
      return { type };
    case 'masked_remote_address': {
      const mask = (k: string, max: number) => (f.has(k) ? readInt(ctx, f.get(k)!.value, join(apath, k), 0, max, max) : max);
      const v4 = mask('v4_prefix_mask_len', 32);
      const v6 = mask('v6_prefix_mask_len', 128);
      return v4 === undefined || v6 === undefined ? undefined : { type, v4, v6 };
    }
    case 'request_headers': {
      const header = str('header_name');
      const k = str('descriptor_key');
      return header === undefined || k === undefined ? undefined : { type, header: header.toLowerCase(), key: k, skipIfAbsent: bool('skip_if_absent', false) };
    }
    case 'query_parameters': {
      const param = str('query_parameter_name');
      const k = str('descriptor_key');
      return param === undefined || k === undefined ? undefined : { type, param, key: k, skipIfAbsent: bool('skip_if_absent', false) };
    }
    case 'generic_key': {
      const value = str('descriptor_value');
      return value === undefined ? undefined : { type, key: key('generic_key'), value };
    }
    case 'header_value_match': {
      const value = str('descriptor_value');
      const headers = readMatchers(ctx, f.get('headers'), join(apath, 'headers'), at, readHeaderMatcher);
      return value === undefined || headers === undefined
        ? undefined
        : { type, key: key('header_match'), value, expectMatch: bool('expect_match', true), headers };
    }
    case 'query_parameter_value_match': {
      const value = str('descriptor_value');
      const params = readMatchers(ctx, f.get('query_parameters'), join(apath, 'query_parameters'), at, readQueryMatcher);
      return value === undefined || params === undefined
        ? undefined
        : { type, key: key('query_match'), value, expectMatch: bool('expect_match', true), params };
    }
    case 'cookie': {
      const cookieName = str('name');
      return cookieName === undefined ? undefined : { type, name: cookieName, key: key(cookieName), skipIfAbsent: bool('skip_if_absent', false) };
    }
    case 'method':
      return { type, key: key('method') };
    case 'host':
      return { type, key: key('host') };
    case 'path':
      return { type, key: key('path'), stripQuery: bool('strip_query', false) };
    case 'region': {
      const headersField = f.get('headers');
      const headers = headersField === undefined ? undefined : readStringList(ctx, headersField, join(apath, 'headers'));
      return {
        type,
        key: key('region'),
        ...(headers !== undefined ? { headers: headers.map((h) => h.toLowerCase()) } : {}),
        geoip: bool('geoip', true),
        skipIfAbsent: bool('skip_if_absent', false),
      };
    }
  }
}

function readStringList(ctx: FileContext, field: Field, path: string): string[] | undefined {
  const node = ctx.deref(field.value);
  if (node === undefined || !isSeq(node)) {
    ctx.error(node ?? field.key, path, `must be a list of header names, not ${describeNode(node)}`);
    return undefined;
  }
  const out: string[] = [];
  node.items.forEach((raw, i) => {
    const s = readString(ctx, raw, `${path}[${i}]`);
    if (s === '') ctx.error(ctx.deref(raw) ?? node, `${path}[${i}]`, 'must not be empty');
    else if (s !== undefined) out.push(s);
  });
  return out;
}
