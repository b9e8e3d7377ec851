/**
 * A statsd_exporter mapping file (the format PROMETHEUS_MAPPER_YAML names), read and checked. What is kept is
 * what changes the exported series: `match` (glob or `match_type: regex`), `name` and `labels` (with `$n`),
 * `match_metric_type`, `action: drop`, the observer type (`observer_type`, or its older name `timer_type`),
 * histogram buckets and summary quantiles (under `histogram_options`/`summary_options`, or the older top-level
 * `buckets`/`quantiles`), `scale`, `help`, and the same under `defaults`. Errors name the file, line and field.
 */
import { LineCounter, isMap, isSeq, parseDocument, type Node } from 'yaml';
import { RE2JS } from 're2js';

export type StatType = 'counter' | 'gauge' | 'observer';
export type ObserverType = 'histogram' | 'summary';

export interface Mapping {
  readonly match: string;
  readonly matchType: 'glob' | 'regex';
  /** A glob's pattern compiled: each `*` one dot-separated field, captured. */
  readonly pattern: RE2JS;
  readonly name: string;
  readonly labels: readonly (readonly [string, string])[];
  readonly matchMetricType: StatType | undefined;
  readonly drop: boolean;
  readonly observerType: ObserverType;
  readonly buckets: readonly number[];
  readonly quantiles: readonly number[];
  readonly scale: number | undefined;
  readonly help: string | undefined;
}

export interface MappingConfig {
  readonly globs: readonly Mapping[];
  readonly regexes: readonly Mapping[];
  /** Keys the exporter reads that change nothing here (ttl, honor_labels, ...), with their line, to log once. */
  readonly ignored: readonly string[];
}

/** Prometheus client libraries' default histogram buckets (statsd_exporter's default). */
export const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** statsd_exporter's default summary quantiles. */
export const DEFAULT_QUANTILES = [0.5, 0.9, 0.99];

const GLOB_LINE = /^(\*|[a-zA-Z_][a-zA-Z0-9_-]*)(\.\*|\.[a-zA-Z0-9_][a-zA-Z0-9_-]*)*$/;
const NAME = /^([a-zA-Z_]|\$\{?\d+\}?)([a-zA-Z0-9_]|\$\{?\d+\}?)*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]+$/;
const MAPPING_KEYS = new Set(['match', 'name', 'labels', 'match_type', 'match_metric_type', 'action', 'observer_type', 'timer_type', 'buckets', 'quantiles']);
const MORE_KEYS = new Set(['histogram_options', 'summary_options', 'scale', 'help']);
const IGNORED_KEYS = new Set(['ttl', 'honor_labels']);

export class MappingFileError extends Error {}

export function parseMappingFile(text: string, file: string): MappingConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true });
  const at = (node: Node | null | undefined) => (node?.range ? `${file}:${lines.linePos(node.range[0]).line}` : file);
  const fail = (node: Node | null | undefined, message: string): never => {
    throw new MappingFileError(`${at(node)}: ${message}`);
  };
  if (doc.errors.length > 0) throw new MappingFileError(`${file}: ${doc.errors[0]!.message}`);
  const root = doc.contents;
  if (!isMap(root)) return fail(root, 'expected a map with `mappings:`');
  const ignored: string[] = [];
  const defaultsNode = root.get('defaults', true) as Node | undefined;
  const defaults = readOptions(defaultsNode, at, fail, ignored, 'defaults');
  const defaultMatchType = defaults.matchType ?? 'glob';
  const mappingsNode = root.get('mappings', true) as Node | undefined;
  if (mappingsNode !== undefined && !isSeq(mappingsNode)) fail(mappingsNode, '`mappings` must be a list');
  const globs: Mapping[] = [];
  const regexes: Mapping[] = [];
  for (const [i, node] of (isSeq(mappingsNode) ? mappingsNode.items : []).entries()) {
    if (!isMap(node)) return fail(node as Node, `mappings[${i}]: expected a map`);
    const field = `mappings[${i}]`;
    const o = readOptions(node, at, fail, ignored, field);
    const get = (key: string) => node.get(key, true) as Node | undefined;
    const str = (key: string): string | undefined => {
      const v = node.get(key);
      if (v === undefined || v === null) return undefined;
      if (typeof v !== 'string') return fail(get(key), `${field}.${key} must be a string`);
      return v;
    };
    const match = str('match') ?? fail(node, `${field}: no \`match\``);
    const name = str('name') ?? '';
    if (name === '') fail(node, `${field}: no metric \`name\``);
    if (!NAME.test(name)) fail(get('name'), `${field}.name '${name}' is not a metric name (letters, digits, _ and $n)`);
    const labels: [string, string][] = [];
    const labelsNode = get('labels');
    if (labelsNode !== undefined && labelsNode !== null) {
      if (!isMap(labelsNode)) return fail(labelsNode, `${field}.labels must be a map`);
      for (const [k, v] of Object.entries(labelsNode.toJSON() as Record<string, unknown>)) {
        if (!LABEL.test(k)) fail(labelsNode, `${field}.labels: '${k}' is not a label name`);
        if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') return fail(labelsNode, `${field}.labels.${k} must be a string`);
        labels.push([k, String(v)]);
      }
    }
    const matchType = o.matchType ?? defaultMatchType;
    let pattern: RE2JS;
    if (matchType === 'glob') {
      if (!GLOB_LINE.test(match)) fail(get('match'), `${field}.match '${match}' is not a glob (dot-separated fields, each a name or *)`);
      const source = match
        .split('.')
        .map((f) => (f === '*' ? '([^.]*)' : RE2JS.quote(f)))
        .join('\\.');
      pattern = RE2JS.compile(`^${source}$`);
    } else {
      try {
        pattern = RE2JS.compile(match);
      } catch (err) {
        return fail(get('match'), `${field}.match: invalid regex: ${(err as Error).message}`);
      }
    }
    const action = str('action') ?? 'map';
    if (action !== 'map' && action !== 'drop') fail(get('action'), `${field}.action must be map or drop`);
    const mapping: Mapping = {
      match,
      matchType,
      pattern,
      name,
      labels,
      matchMetricType: o.matchMetricType,
      drop: action === 'drop',
      observerType: o.observerType ?? defaults.observerType ?? 'summary',
      buckets: o.buckets ?? defaults.buckets ?? DEFAULT_BUCKETS,
      quantiles: o.quantiles ?? defaults.quantiles ?? DEFAULT_QUANTILES,
      scale: o.scale,
      help: o.help,
    };
    (matchType === 'glob' ? globs : regexes).push(mapping);
  }
  return { globs, regexes, ignored };
}

interface Options {
  matchType?: 'glob' | 'regex';
  matchMetricType?: StatType;
  observerType?: ObserverType;
  buckets?: number[];
  quantiles?: number[];
  scale?: number;
  help?: string;
}

/** The options a mapping and `defaults` share; unknown keys stop the load, keys with no effect here are listed. */
function readOptions(
  node: Node | undefined,
  at: (n: Node | null | undefined) => string,
  fail: (n: Node | null | undefined, m: string) => never,
  ignored: string[],
  field: string,
): Options {
  const o: Options = {};
  if (node === undefined || node === null) return o;
  if (!isMap(node)) return fail(node, `${field} must be a map`);
  const value = node.toJSON() as Record<string, unknown>;
  const child = (key: string) => node.get(key, true) as Node | undefined;
  for (const key of Object.keys(value)) {
    if (IGNORED_KEYS.has(key) || key === 'glob_disable_ordering') ignored.push(`${at(child(key))}: ${field}.${key}`);
    else if (!MAPPING_KEYS.has(key) && !MORE_KEYS.has(key)) fail(child(key), `${field}: unknown key '${key}'`);
  }
  const oneOf = <T extends string>(key: string, allowed: readonly T[]): T | undefined => {
    const v = value[key];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string' || !allowed.includes(v as T)) return fail(child(key), `${field}.${key} must be one of ${allowed.join(', ')}`);
    return v as T;
  };
  const numbers = (v: unknown, where: string, node2: Node | undefined, pick?: (x: unknown) => unknown): number[] | undefined => {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return fail(node2, `${where} must be a list`);
    const out = (v as unknown[]).map(pick ?? ((x: unknown) => x));
    if (out.some((x) => typeof x !== 'number' || !Number.isFinite(x))) fail(node2, `${where} must hold numbers`);
    return out.length === 0 ? undefined : (out as number[]);
  };
  const setIf = <K extends keyof Options>(key: K, v: Options[K] | undefined) => {
    if (v !== undefined) o[key] = v;
  };
  setIf('matchType', oneOf('match_type', ['glob', 'regex'] as const));
  setIf('matchMetricType', oneOf('match_metric_type', ['counter', 'gauge', 'observer'] as const));
  // observer_type wins over timer_type, its older name; an empty one means summary.
  setIf('observerType', oneOf('observer_type', ['histogram', 'summary'] as const) ?? oneOf('timer_type', ['histogram', 'summary'] as const));
  const hist = value['histogram_options'] as Record<string, unknown> | undefined;
  const summ = value['summary_options'] as Record<string, unknown> | undefined;
  const quantile = (q: unknown) => (q !== null && typeof q === 'object' ? (q as Record<string, unknown>)['quantile'] : q);
  setIf(
    'buckets',
    numbers(hist?.['buckets'], `${field}.histogram_options.buckets`, child('histogram_options')) ??
      numbers(value['buckets'], `${field}.buckets`, child('buckets')),
  );
  setIf(
    'quantiles',
    numbers(summ?.['quantiles'], `${field}.summary_options.quantiles`, child('summary_options'), quantile) ??
      numbers(value['quantiles'], `${field}.quantiles`, child('quantiles'), quantile),
  );
  if (value['scale'] !== undefined) {
    if (typeof value['scale'] !== 'number') fail(child('scale'), `${field}.scale must be a number`);
    o.scale = value['scale'];
  }
  if (typeof value['help'] === 'string') o.help = value['help'];
  if (o.observerType === 'histogram' && summ !== undefined) fail(child('summary_options'), `${field}: a histogram cannot take summary_options`);
  if (o.observerType === 'summary' && hist !== undefined) fail(child('histogram_options'), `${field}: a summary cannot take histogram_options`);
  return o;
}
