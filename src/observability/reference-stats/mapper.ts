/**
 * What a statsd_exporter mapping makes of one stat: the first glob mapping (in file order) whose fields match
 * and whose `match_metric_type` fits, else the first regex mapping that matches anywhere in the name; its name
 * and labels with `$n` put in. A stat no mapping takes keeps its own name, escaped to a Prometheus name.
 * Results are kept per stat name and type, bounded.
 */
import type { Mapping, MappingConfig, StatType } from './mapping-file.js';

export type Resolution =
  { readonly kind: 'drop' } | { readonly kind: 'map'; readonly name: string; readonly labels: Record<string, string>; readonly mapping: Mapping | undefined };

const CACHE_MAX = 10_000;

export class StatMapper {
  private readonly cache = new Map<string, Resolution>();

  constructor(private readonly config: MappingConfig) {}

  resolve(stat: string, type: StatType): Resolution {
    const key = `${type}\0${stat}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const r = this.compute(stat, type);
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(key, r);
    return r;
  }

  private compute(stat: string, type: StatType): Resolution {
    for (const m of this.config.globs) {
      if (m.matchMetricType !== undefined && m.matchMetricType !== type) continue;
      const matcher = m.pattern.matcher(stat);
      if (!matcher.matches()) continue;
      const groups = Array.from({ length: matcher.groupCount() }, (_, i) => matcher.group(i + 1) ?? '');
      return this.mapped(m, (template) => globExpand(template, stat, groups));
    }
    for (const m of this.config.regexes) {
      const matcher = m.pattern.matcher(stat);
      if (!matcher.find()) continue;
      if (m.matchMetricType !== undefined && m.matchMetricType !== type) continue;
      const group = (ref: string | number): string => {
        try {
          return matcher.group(ref) ?? '';
        } catch {
          return ''; // no such group
        }
      };
      return this.mapped(m, (template) => regexExpand(template, group));
    }
    return { kind: 'map', name: escapeMetricName(stat), labels: {}, mapping: undefined };
  }

  private mapped(m: Mapping, expand: (template: string) => string): Resolution {
    if (m.drop) return { kind: 'drop' };
    const labels: Record<string, string> = {};
    for (const [k, v] of m.labels) labels[k] = expand(v);
    return { kind: 'map', name: escapeMetricName(expand(m.name)), labels, mapping: m };
  }
}

/** A glob mapping's `$n` / `${n}`: the n-th `*` field; `$0` the whole stat; a number past the captures gives ''. */
function globExpand(template: string, stat: string, groups: string[]): string {
  return template.replace(/\$\{?([a-zA-Z0-9_$]+)\}?/g, (_, ref: string) => {
    const n = /^\d+$/.test(ref) ? Number(ref) : -1;
    if (n === 0) return stat;
    return n > 0 && n <= groups.length ? groups[n - 1]! : '';
  });
}

/**
 * A regex mapping's template as Go's Regexp.ExpandString reads it: `$$` is `$`; `${name}` or `$name` where the
 * name is the longest run of letters, digits and `_` (so `$1x` names group `1x`); a number is a group index;
 * a group that does not exist or did not take part gives ''.
 */
function regexExpand(template: string, group: (ref: string | number) => string): string {
  return template.replace(/\$(\$|\{([a-zA-Z0-9_]+)\}|([a-zA-Z0-9_]+))/g, (all: string, _x: string, braced?: string, bare?: string) => {
    if (all === '$$') return '$';
    const ref = braced ?? bare ?? '';
    return /^\d+$/.test(ref) ? group(Number(ref)) : group(ref);
  });
}

/** A stat name as a Prometheus name: a leading digit gets `_` before it; any other character than [a-zA-Z0-9_] becomes `_` (a second `-` in a row is dropped). */
export function escapeMetricName(name: string): string {
  let out = /^[0-9]/.test(name) ? '_' : '';
  let prev = '';
  for (const c of name) {
    if (/[a-zA-Z0-9_]/.test(c)) out += c;
    else if (!(c === '-' && prev === '-')) out += '_';
    prev = c;
  }
  return out;
}
