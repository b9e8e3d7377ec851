/**
 * Doorman's resource file (its `-config` YAML), parsed with positions and validated with the same quality of
 * errors as our rules (`file:line:col: resources[2].algorithm.lease_length: ...`). A file Doorman loads loads
 * here unchanged. Lookup: the template whose identifier_glob equals the id, else the first glob that matches
 * it, in file order; the `"*"` template must exist and be last (Doorman refuses the file otherwise).
 */
import { LineCounter, isMap, isScalar, parseDocument } from 'yaml';
import type { YAMLMap } from 'yaml';
import { ConfigError } from '../config/config-error.js';
import { join, readFields, readMap, readMapList, valueNode } from '../config/validate/fields.js';
import type { Field, Fields } from '../config/validate/fields.js';
import { compileGlob, type Glob } from '../config/load/glob.js';
import { DEFAULT_LIMITS, LimitExceeded } from '../config/limits.js';
import { FileContext, describeNode, readInt, readString, scalarKind } from '../config/validate/yaml-nodes.js';

export const KINDS = ['NO_ALGORITHM', 'STATIC', 'PROPORTIONAL_SHARE', 'FAIR_SHARE'] as const;
export type DoormanKind = (typeof KINDS)[number];
/** What a resource runs: Doorman's four kinds, or our water-filling max-min share (see algorithms.ts). */
export type AlgorithmKind = DoormanKind | 'FAIR_SHARE_MAXMIN';

export interface NamedParameter {
  readonly name: string;
  readonly value: string;
}

export interface AlgorithmConfig {
  /** The kind on the wire (Doorman's enum): FAIR_SHARE_MAXMIN is announced as FAIR_SHARE. */
  readonly wireKind: DoormanKind;
  /** The kind computed: FAIR_SHARE with the parameter `max_min: true` is FAIR_SHARE_MAXMIN. */
  readonly kind: AlgorithmKind;
  readonly leaseLength: number;
  readonly refreshInterval: number;
  /** Seconds of learning mode after state was lost; Doorman's default is the lease length; ≤ 0 = none. */
  readonly learningModeDuration: number;
  readonly parameters: readonly NamedParameter[];
  /**
   * Parameter `priority_bands: true` (ours): a sharing kind splits the clients into bands by priority. Off by
   * default, as Doorman's algorithms never look at priority.
   */
  readonly priorityBands: boolean;
}

export interface ResourceTemplate {
  readonly identifierGlob: string;
  readonly capacity: number;
  readonly safeCapacity?: number;
  readonly description?: string;
  readonly algorithm: AlgorithmConfig;
}

export interface CapacityConfig {
  readonly file: string;
  readonly templates: readonly ResourceTemplate[];
  /** The template for a resource id (never undefined: `"*"` is required). */
  find(id: string): ResourceTemplate;
}

export type CapacityLoad = { ok: true; config: CapacityConfig } | { ok: false; errors: ConfigError[] };

const TOP = ['resources'] as const;
const TEMPLATE = ['identifier_glob', 'capacity', 'safe_capacity', 'description', 'algorithm'] as const;
const ALGORITHM = ['kind', 'lease_length', 'refresh_interval', 'learning_mode_duration', 'parameters'] as const;
const PARAMETER = ['name', 'value'] as const;
/** A year of seconds: longer leases are a mistake, and times stay far inside int64 and Number's range. */
const MAX_SECONDS = 366 * 86_400;
/** The parameter that turns FAIR_SHARE into the water-filling max-min share (Doorman ignores unknown parameters). */
export const MAX_MIN_PARAMETER = 'max_min';
export const PRIORITY_BANDS_PARAMETER = 'priority_bands';

function readNumber(ctx: FileContext, field: Field, path: string, min: number): number | undefined {
  const node = valueNode(ctx, field);
  if (isScalar(node) && (scalarKind(node) === 'int' || scalarKind(node) === 'float')) {
    const n = Number(String(node.value).replaceAll('_', ''));
    if (Number.isFinite(n) && n >= min) return n;
  }
  ctx.error(node, path, `must be a number ≥ ${min}, not ${describeNode(node)}`);
  return undefined;
}

function required(ctx: FileContext, fields: Fields, map: YAMLMap, path: string, name: string): Field | undefined {
  const f = fields.get(name);
  if (f === undefined) ctx.error(map, join(path, name), 'is required');
  return f;
}

function readParameters(ctx: FileContext, field: Field | undefined, path: string): NamedParameter[] {
  const out: NamedParameter[] = [];
  for (const item of readMapList(ctx, field, path)) {
    const fields = readFields(ctx, item.map, item.path, PARAMETER, 0, false);
    const nameField = required(ctx, fields, item.map, item.path, 'name');
    const name = nameField ? readString(ctx, nameField.value, join(item.path, 'name')) : undefined;
    const valueField = fields.get('value');
    const value = valueField ? (readString(ctx, valueField.value, join(item.path, 'value')) ?? '') : '';
    if (name !== undefined) out.push({ name, value });
  }
  return out;
}

function readAlgorithmConfig(ctx: FileContext, field: Field, path: string): AlgorithmConfig | undefined {
  const map = readMap(ctx, field, path);
  if (!map) {
    if (map === null) ctx.error(valueNode(ctx, field), path, 'is required');
    return undefined;
  }
  const fields = readFields(ctx, map, path, ALGORITHM, 0, false);
  const kindField = fields.get('kind');
  // proto2's default for the enum is its first value, as Doorman reads a missing kind.
  let wireKind: DoormanKind | undefined = 'NO_ALGORITHM';
  if (kindField) {
    const text = readString(ctx, kindField.value, join(path, 'kind'));
    wireKind = KINDS.find((k) => k === text);
    if (text !== undefined && wireKind === undefined) ctx.error(valueNode(ctx, kindField), join(path, 'kind'), `'${text}' is not one of ${KINDS.join(', ')}`);
  }
  const seconds = (name: string, min: number, dflt?: number): number | undefined => {
    const f = fields.get(name);
    if (f === undefined) {
      if (dflt === undefined) ctx.error(map, join(path, name), 'is required');
      return dflt;
    }
    return readInt(ctx, f.value, join(path, name), min, MAX_SECONDS, undefined);
  };
  const leaseLength = seconds('lease_length', 1);
  const refreshInterval = seconds('refresh_interval', 1);
  if (leaseLength !== undefined && refreshInterval !== undefined && refreshInterval > leaseLength) {
    ctx.error(
      valueNode(ctx, fields.get('refresh_interval')!),
      join(path, 'refresh_interval'),
      `${refreshInterval} is longer than lease_length ${leaseLength}: a lease must outlive its refresh interval`,
    );
  }
  const learning = seconds('learning_mode_duration', -MAX_SECONDS, leaseLength ?? 0);
  const parameters = readParameters(ctx, fields.get('parameters'), join(path, 'parameters'));
  const maxMin = parameters.find((p) => p.name === MAX_MIN_PARAMETER);
  if (maxMin !== undefined && !['true', 'false'].includes(maxMin.value)) {
    ctx.error(map, join(path, 'parameters'), `${MAX_MIN_PARAMETER} must be 'true' or 'false', not '${maxMin.value}'`);
  }
  const isMaxMin = maxMin?.value === 'true';
  if (isMaxMin && wireKind !== 'FAIR_SHARE') ctx.error(map, join(path, 'parameters'), `${MAX_MIN_PARAMETER} applies to kind FAIR_SHARE only`);
  const bands = parameters.find((p) => p.name === PRIORITY_BANDS_PARAMETER);
  if (bands !== undefined && !['true', 'false'].includes(bands.value)) {
    ctx.error(map, join(path, 'parameters'), `${PRIORITY_BANDS_PARAMETER} must be 'true' or 'false', not '${bands.value}'`);
  }
  const priorityBands = bands?.value === 'true';
  if (priorityBands && wireKind !== 'FAIR_SHARE' && wireKind !== 'PROPORTIONAL_SHARE')
    ctx.error(map, join(path, 'parameters'), `${PRIORITY_BANDS_PARAMETER} applies to kinds FAIR_SHARE and PROPORTIONAL_SHARE only`);
  if (wireKind === undefined || leaseLength === undefined || refreshInterval === undefined || learning === undefined) return undefined;
  return Object.freeze({
    priorityBands,
    wireKind,
    kind: isMaxMin ? 'FAIR_SHARE_MAXMIN' : wireKind,
    leaseLength,
    refreshInterval,
    learningModeDuration: learning,
    parameters: Object.freeze(parameters),
  });
}

function readTemplate(ctx: FileContext, map: YAMLMap, path: string): ResourceTemplate | undefined {
  const fields = readFields(ctx, map, path, TEMPLATE, 0, false);
  const globField = required(ctx, fields, map, path, 'identifier_glob');
  const glob = globField ? readString(ctx, globField.value, join(path, 'identifier_glob')) : undefined;
  if (glob === '') ctx.error(valueNode(ctx, globField!), join(path, 'identifier_glob'), 'must not be empty');
  const capField = required(ctx, fields, map, path, 'capacity');
  const capacity = capField ? readNumber(ctx, capField, join(path, 'capacity'), 0) : undefined;
  const safeField = fields.get('safe_capacity');
  const safeCapacity = safeField ? readNumber(ctx, safeField, join(path, 'safe_capacity'), 0) : undefined;
  const descField = fields.get('description');
  const description = descField ? readString(ctx, descField.value, join(path, 'description')) : undefined;
  const algField = required(ctx, fields, map, path, 'algorithm');
  const algorithm = algField ? readAlgorithmConfig(ctx, algField, join(path, 'algorithm')) : undefined;
  if (glob === undefined || glob === '' || capacity === undefined || algorithm === undefined) return undefined;
  if (safeField && safeCapacity === undefined) return undefined;
  return Object.freeze({
    identifierGlob: glob,
    capacity,
    ...(safeCapacity !== undefined ? { safeCapacity } : {}),
    ...(description !== undefined ? { description } : {}),
    algorithm,
  });
}

/** Validates the text of a resource file; `file` names it in errors. */
export function parseCapacityConfig(file: string, text: string): CapacityLoad {
  const fail = (line: number, column: number, reason: string): CapacityLoad => ({
    ok: false,
    errors: [new ConfigError({ file, line, column, path: '', reason })],
  });
  if (Buffer.byteLength(text) > DEFAULT_LIMITS.maxFileBytes) return fail(1, 1, `file larger than ${DEFAULT_LIMITS.maxFileBytes} bytes`);
  const lineCounter = new LineCounter();
  let ctx: FileContext;
  let templates: { t: ResourceTemplate | undefined; map: YAMLMap; path: string }[];
  let root: unknown;
  try {
    const doc = parseDocument(text, { lineCounter, schema: 'failsafe', uniqueKeys: false });
    if (doc.errors.length > 0) {
      const e = doc.errors[0]!;
      const pos = e.linePos?.[0] ?? { line: 1, col: 1 };
      return fail(pos.line, pos.col, `YAML syntax error: ${e.message.split('\n')[0]!}`);
    }
    ctx = new FileContext(file, lineCounter, doc, DEFAULT_LIMITS);
    root = ctx.deref(doc.contents);
    if (root === undefined || !isMap(root)) return fail(1, 1, `a resource file must be a mapping with 'resources', not ${describeNode(root as never)}`);
    const fields = readFields(ctx, root, '', TOP, 0, false);
    templates = readMapList(ctx, fields.get('resources'), 'resources').map((item) => ({
      t: readTemplate(ctx, item.map, item.path),
      map: item.map,
      path: item.path,
    }));
  } catch (err) {
    if (!(err instanceof LimitExceeded) && !(err instanceof RangeError)) throw err;
    const { line, col } = lineCounter.linePos(err instanceof LimitExceeded ? err.offset : 0);
    return fail(line, col, err instanceof LimitExceeded ? err.reason : `nested too deeply (${err.message})`);
  }
  const star = templates.findIndex((x) => x.t?.identifierGlob === '*');
  if (star < 0) ctx.error(root, 'resources', `a template with identifier_glob "*" is required (the catch-all, last)`);
  else if (star !== templates.length - 1) ctx.error(templates[star]!.map, `${templates[star]!.path}.identifier_glob`, `the "*" template must be the last one`);
  if (ctx.errors.length > 0) return { ok: false, errors: ctx.errors };
  return {
    ok: true,
    config: compileCapacityConfig(
      file,
      templates.map((x) => x.t!),
    ),
  };
}

export function compileCapacityConfig(file: string, templates: readonly ResourceTemplate[]): CapacityConfig {
  const exact = new Map<string, ResourceTemplate>();
  const globs: { glob: Glob; t: ResourceTemplate }[] = [];
  for (const t of templates) {
    if (!exact.has(t.identifierGlob)) exact.set(t.identifierGlob, t);
    globs.push({ glob: compileGlob(t.identifierGlob), t });
  }
  const fallback = templates[templates.length - 1]!;
  return Object.freeze({
    file,
    templates: Object.freeze([...templates]),
    find(id: string): ResourceTemplate {
      const hit = exact.get(id);
      if (hit !== undefined) return hit;
      for (const g of globs) if (g.glob.matches(id)) return g.t;
      return fallback;
    },
  });
}
