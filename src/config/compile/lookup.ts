/**
 * The descriptor index of one domain and its lookup, with envoyproxy/ratelimit's GetLimit semantics:
 *
 * - Walk the request entries in order, one config level per entry. At each level the entry lands on the node
 *   with the same key and value (exact); else on the first wildcard node of that key whose pattern matches the
 *   value (config order); else on the node with that key and no value (key-only).
 * - A rule applies only when the LAST entry lands on a node with a rate limit. A limit met earlier does not
 *   apply to a longer request; a request shorter than the config path stops on a node that may have no limit.
 * - The walk stops as soon as the node it landed on has no children (or no node matched).
 *
 * Unlike the reference we never glue `key_value` into one string to look it up, so `{a_b: c}` and `{a: b_c}`
 * cannot meet. Each level is three Maps, so a lookup costs a few hash probes per entry plus the wildcard scans.
 */
import type { DescriptorEntry } from '../../vocab/types.js';
import { keyPatternMatches } from '../load/glob.js';
import type { Glob } from '../load/glob.js';
import type { CompiledDomain, CompiledRule, RuleMatch, Validity } from '../types.js';
import { inForce } from '../validate/validate-validity.js';

export interface IndexNode {
  readonly key: string;
  /** '' for a key-only node. */
  readonly value: string;
  readonly glob?: Glob;
  /** `valid_from`/`valid_until`: outside it the node and its children are absent (the walk tries the next candidate). */
  readonly validity?: Validity;
  readonly rule?: CompiledRule;
  readonly shareThreshold: boolean;
  readonly valueToMetric: boolean;
  readonly children?: IndexLevel;
}

export interface IndexLevel {
  readonly exact: ReadonlyMap<string, ReadonlyMap<string, IndexNode>>;
  /** Wildcard nodes by key, in config order (the first match wins). */
  readonly wildcards: ReadonlyMap<string, readonly IndexNode[]>;
  readonly keyOnly: ReadonlyMap<string, IndexNode>;
  /** Nodes whose key ends in `*`, matched as a prefix of the request's key (glob.ts isKeyPattern), in config order. */
  readonly keyPatterns: readonly IndexNode[];
}

type MatchKind = 'exact' | 'wildcard' | 'key';

export class DomainIndex implements CompiledDomain {
  constructor(
    readonly name: string,
    readonly files: readonly string[],
    private readonly root: IndexLevel,
    /** True when some node has value_to_metric: stats keys then depend on the request path. */
    private readonly anyValueToMetric: boolean,
  ) {
    Object.freeze(this);
  }

  lookup(entries: readonly DescriptorEntry[], nowMs?: number): RuleMatch | undefined {
    // Only nodes with a validity pay for it: one comparison or two each.
    const live = (n: IndexNode | undefined): IndexNode | undefined =>
      n === undefined || n.validity === undefined || nowMs === undefined || inForce(n.validity, nowMs) ? n : undefined;
    let level: IndexLevel | undefined = this.root;
    let rule: CompiledRule | undefined;
    let leaf = false;
    let shared: (string | undefined)[] | undefined;
    // Only recorded when a stats key may need the path; most lookups allocate nothing here.
    let path: { node: IndexNode; kind: MatchKind }[] | undefined;
    const last = entries.length - 1;
    for (let i = 0; i <= last && level !== undefined; i++) {
      const entry = entries[i]!;
      let kind: MatchKind = 'exact';
      let node: IndexNode | undefined = live(level.exact.get(entry.key)?.get(entry.value));
      if (node === undefined) {
        const wildcards = level.wildcards.get(entry.key);
        if (wildcards !== undefined) {
          for (const w of wildcards) {
            if (w.glob!.matches(entry.value) && live(w) !== undefined) {
              node = w;
              kind = 'wildcard';
              break;
            }
          }
        }
      }
      if (node === undefined && level.keyPatterns.length > 0) {
        for (const p of level.keyPatterns) {
          if (keyPatternMatches(p, entry.key, entry.value) && live(p) !== undefined) {
            node = p;
            kind = 'wildcard';
            break;
          }
        }
      }
      if (node === undefined) {
        node = live(level.keyOnly.get(entry.key));
        kind = 'key';
      }
      if (node === undefined) break;
      if (kind === 'wildcard' && node.shareThreshold) {
        shared ??= new Array<string | undefined>(entries.length);
        shared[i] = node.value;
      }
      if (this.anyValueToMetric) (path ??= []).push({ node, kind });
      if (i === last && node.rule !== undefined) {
        rule = node.rule;
        leaf = node.children === undefined;
      }
      level = node.children;
    }
    if (rule === undefined) return undefined;

    const counterEntries = shared === undefined ? entries : entries.map((e, i) => (shared[i] === undefined ? e : { key: e.key, value: shared[i] }));
    const statsKey = this.statsKeyFor(rule, entries, shared, path);
    // The reference copies a matched limit with its metadata, then builds it anew (without) for a detailed
    // stats key on a leaf, or a value_to_metric key that is not the rule's own.
    const keepsMetadata = rule.metadata !== undefined && (rule.detailedMetric ? !leaf : statsKey === rule.statsKey);
    return Object.freeze({ rule, counterEntries, statsKey, ...(keepsMetadata ? { metadata: rule.metadata } : {}) });
  }

  /**
   * The stats key as the reference builds it:
   * - detailed_metric on the matched rule: `domain.key_value...` from the request (every entry as `key_value`,
   *   even with an empty value), except entries shared by share_threshold, which show the pattern;
   * - otherwise the config path, where a node with value_to_metric shows the request's value instead of its
   *   own (key-only and wildcard nodes), and share_threshold keeps the pattern.
   */
  private statsKeyFor(
    rule: CompiledRule,
    entries: readonly DescriptorEntry[],
    shared: readonly (string | undefined)[] | undefined,
    path: readonly { node: IndexNode; kind: MatchKind }[] | undefined,
  ): string {
    if (rule.detailedMetric) {
      let key = this.name;
      entries.forEach((e, i) => {
        const pattern = shared?.[i];
        if (shared === undefined) key += `.${e.key}_${e.value}`;
        else if (pattern !== undefined) key += `.${e.key}_${pattern}`;
        else key += e.value === '' ? `.${e.key}` : `.${e.key}_${e.value}`;
      });
      return key;
    }
    if (!this.anyValueToMetric || path === undefined) return rule.statsKey;
    let key = this.name;
    path.forEach(({ node, kind }, i) => {
      const e = entries[i]!;
      const withValue = e.value === '' ? e.key : `${e.key}_${e.value}`;
      if (kind === 'exact') key += `.${withValue}`;
      else if (kind === 'wildcard') {
        key += shared?.[i] === undefined && node.valueToMetric ? `.${withValue}` : `.${e.key}_${node.value}`;
      } else key += node.valueToMetric ? `.${withValue}` : `.${e.key}`;
    });
    return key;
  }
}
