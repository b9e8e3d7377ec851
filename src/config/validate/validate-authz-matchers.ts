/**
 * Validation of the matchers inside the `authz:` block: Envoy's HeaderMatcher (header_value_match),
 * QueryParameterMatcher (query_parameter_value_match) and StringMatcher, with their field names. A regex is
 * compiled here (authz-matchers.ts) so that a bad one is a load error with its position.
 */
import { isScalar } from 'yaml';
import type { YAMLMap } from 'yaml';
import type { RawHeaderMatcher, RawQueryMatcher, RawStringMatch } from '../authz-types.js';
import { compileRegex } from '../compile/authz-matchers.js';
import { join, readFields, readMap, readMapList, valueNode } from './fields.js';
import type { Field, Fields } from './fields.js';
import { describeNode, readBool, readString } from './yaml-nodes.js';
import type { FileContext } from './yaml-nodes.js';

const STRING_MATCH_KINDS = ['exact', 'prefix', 'suffix', 'contains', 'safe_regex'] as const;
const STRING_MATCH_KEYS = [...STRING_MATCH_KINDS, 'ignore_case'];
/** HeaderMatcher: the `string_match` form and Envoy's older direct fields (one specifier at most). */
const HEADER_SPECIFIERS = ['string_match', 'exact_match', 'prefix_match', 'suffix_match', 'contains_match', 'safe_regex_match', 'present_match'];
const HEADER_MATCHER_KEYS = ['name', ...HEADER_SPECIFIERS, 'invert_match', 'treat_missing_header_as_empty'];
const QUERY_MATCHER_KEYS = ['name', 'string_match', 'present_match'];
const REGEX_KEYS = ['regex', 'google_re2'];

/** Keys checked strictly: an unknown key is an error, never the reference-compatibility warning. */
export function strictFields(ctx: FileContext, map: YAMLMap, path: string, allowed: readonly string[]): Fields {
  return readFields(ctx, map, path, allowed, 0, false);
}

export function readMatchers<T>(
  ctx: FileContext,
  field: Field | undefined,
  path: string,
  at: Parameters<FileContext['error']>[0],
  read: (ctx: FileContext, map: YAMLMap, path: string) => T | undefined,
): T[] | undefined {
  const items = readMapList(ctx, field, path);
  if (items.length === 0) {
    ctx.error(field ? valueNode(ctx, field) : at, path, 'must list at least one matcher');
    return undefined;
  }
  const out: T[] = [];
  for (const m of items) {
    const one = read(ctx, m.map, m.path);
    if (one !== undefined) out.push(one);
  }
  return out.length === items.length ? out : undefined;
}

export function readHeaderMatcher(ctx: FileContext, map: YAMLMap, path: string): RawHeaderMatcher | undefined {
  const f = strictFields(ctx, map, path, HEADER_MATCHER_KEYS);
  const name = readName(ctx, f, map, path);
  const given = HEADER_SPECIFIERS.filter((k) => f.has(k));
  if (given.length > 1) {
    ctx.error(map, path, `has ${given.join(' and ')}; a header matcher takes at most one of ${HEADER_SPECIFIERS.join(', ')}`);
    return undefined;
  }
  const flag = (k: string) => (f.has(k) ? (readBool(ctx, f.get(k)!.value, join(path, k)) ?? false) : false);
  const base = { invert: flag('invert_match'), treatMissingAsEmpty: flag('treat_missing_header_as_empty') };
  const spec = given[0];
  if (name === undefined) return undefined;
  if (spec === undefined) return { name, ...base };
  const field = f.get(spec)!;
  const p = join(path, spec);
  if (spec === 'present_match') return { name, present: readBool(ctx, field.value, p) ?? true, ...base };
  const match =
    spec === 'string_match'
      ? readStringMatch(ctx, field, p)
      : spec === 'safe_regex_match'
        ? readRegexMatch(ctx, field, p)
        : readPlainMatch(ctx, field, p, spec.replace(/_match$/, '') as 'exact');
  return match === undefined ? undefined : { name, match, ...base };
}

export function readQueryMatcher(ctx: FileContext, map: YAMLMap, path: string): RawQueryMatcher | undefined {
  const f = strictFields(ctx, map, path, QUERY_MATCHER_KEYS);
  const name = readName(ctx, f, map, path);
  if (f.has('string_match') && f.has('present_match')) {
    ctx.error(map, path, 'has string_match and present_match; a query parameter matcher takes at most one');
    return undefined;
  }
  if (name === undefined) return undefined;
  const sm = f.get('string_match');
  if (sm === undefined) return { name };
  const match = readStringMatch(ctx, sm, join(path, 'string_match'));
  return match === undefined ? undefined : { name, match };
}

function readName(ctx: FileContext, f: Fields, map: YAMLMap, path: string): string | undefined {
  const field = f.get('name');
  const s = field === undefined ? '' : readString(ctx, field.value, join(path, 'name'));
  if (s === '') ctx.error(field ? valueNode(ctx, field) : map, join(path, 'name'), 'is required');
  return s === '' ? undefined : s;
}

function readPlainMatch(ctx: FileContext, field: Field, path: string, kind: 'exact' | 'prefix' | 'suffix' | 'contains'): RawStringMatch | undefined {
  const node = ctx.deref(field.value);
  if (node !== undefined && !isScalar(node)) {
    ctx.error(node, path, `must be a string, not ${describeNode(node)}`);
    return undefined;
  }
  const value = readString(ctx, field.value, path);
  return value === undefined ? undefined : { kind, value, ignoreCase: false };
}

/** A RegexMatcher: `{regex: '...'}` (google_re2 accepted and ignored, as Envoy deprecated it). */
function readRegexMatch(ctx: FileContext, field: Field, path: string): RawStringMatch | undefined {
  const map = readMap(ctx, field, path);
  if (!map) {
    if (map === null) ctx.error(valueNode(ctx, field), join(path, 'regex'), 'is required');
    return undefined;
  }
  const f = strictFields(ctx, map, path, REGEX_KEYS);
  const rf = f.get('regex');
  const regex = rf === undefined ? '' : readString(ctx, rf.value, join(path, 'regex'));
  if (regex === undefined) return undefined;
  if (regex === '') {
    ctx.error(rf ? valueNode(ctx, rf) : map, join(path, 'regex'), 'is required');
    return undefined;
  }
  try {
    compileRegex(regex);
  } catch (err) {
    ctx.error(valueNode(ctx, rf!), join(path, 'regex'), `'${regex}' ${(err as Error).message}`);
    return undefined;
  }
  return { kind: 'safe_regex', regex };
}

/** Envoy's StringMatcher: exactly one of exact, prefix, suffix, contains, safe_regex; ignore_case. */
function readStringMatch(ctx: FileContext, field: Field, path: string): RawStringMatch | undefined {
  const map = readMap(ctx, field, path);
  if (!map) {
    if (map === null) ctx.error(valueNode(ctx, field), path, `needs one of ${STRING_MATCH_KINDS.join(', ')}`);
    return undefined;
  }
  const f = strictFields(ctx, map, path, STRING_MATCH_KEYS);
  const given = STRING_MATCH_KINDS.filter((k) => f.has(k));
  if (given.length !== 1) {
    ctx.error(
      map,
      path,
      given.length === 0
        ? `needs one of ${STRING_MATCH_KINDS.join(', ')}`
        : `has ${given.join(' and ')}; a string matcher takes exactly one of ${STRING_MATCH_KINDS.join(', ')}`,
    );
    return undefined;
  }
  const kind = given[0]!;
  const ic = f.get('ignore_case');
  const ignoreCase = ic === undefined ? false : (readBool(ctx, ic.value, join(path, 'ignore_case')) ?? false);
  if (kind === 'safe_regex') {
    if (ic !== undefined && ignoreCase) ctx.error(valueNode(ctx, ic), join(path, 'ignore_case'), 'has no effect on safe_regex (use (?i) in the regex)');
    return readRegexMatch(ctx, f.get(kind)!, join(path, kind));
  }
  const m = readPlainMatch(ctx, f.get(kind)!, join(path, kind), kind);
  return m === undefined ? undefined : ({ ...m, ignoreCase } as RawStringMatch);
}
