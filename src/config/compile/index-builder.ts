/**
 * The descriptor index of a domain under construction (compile.ts): descriptors are added file by file with
 * their duplicate and budget checks, then frozen into the IndexLevel tree the engine looks up (lookup.ts). Both
 * walks are generators yielding after each descriptor, so that a large set can be built in slices (slices.ts).
 */
import { ConfigError } from '../config-error.js';
import { compileGlob, isKeyPattern, isWildcard } from '../load/glob.js';
import type { IndexLevel, IndexNode } from './lookup.js';
import type { RawDescriptor, RawFile } from '../raw.js';
import type { Steps } from '../slices.js';
import type { CompiledLimit, CompiledRule, Validity } from '../types.js';
import { narrow } from '../validate/validate-validity.js';

/** A level under construction; frozen into an IndexLevel at the end. */
export interface LevelBuilder {
  exact: Map<string, Map<string, NodeBuilder>>;
  wildcards: Map<string, NodeBuilder[]>;
  keyOnly: Map<string, NodeBuilder>;
  /** Nodes whose key ends in `*`, in config order (glob.ts isKeyPattern); in no other map. */
  keyPatterns: NodeBuilder[];
  /**
   * Every node of the level by the reference's name for it (`key` or `key_value`). The reference indexes a
   * level by that name, so two descriptors with the same name are duplicates there even when key and value
   * differ (`{key: a_b}` and `{key: a, value: b}`); a file it rejects for that is rejected here too.
   */
  byRefName: Map<string, NodeBuilder>;
}

interface NodeBuilder {
  raw: RawDescriptor;
  file: string;
  /** The descriptor's `valid_from`/`valid_until`, narrowed by its file's at the top level. */
  validity?: Validity;
  rule?: CompiledRule;
  /** Absent for a descriptor without children (most of them). */
  children?: LevelBuilder;
}

/** A rule as describe() lists it: with the descriptors from the domain root down to it. */
export interface RuleEntry {
  readonly rule: CompiledRule;
  /** When the rule exists: the intersection of the intervals of its file and of every descriptor on its path. */
  readonly validity?: Validity;
  readonly raw: RawDescriptor;
  readonly chain: readonly RawDescriptor[];
  readonly file: string;
}

export interface DomainBuilder {
  name: string;
  /** Descriptors indexed so far (bounded by maxDescriptorsPerDomain). */
  count: number;
  files: string[];
  firstFile: string;
  root: LevelBuilder;
  /** Every rule, in the order its descriptor was added (files in load order, each depth first). */
  rules: RuleEntry[];
}

export function newLevel(): LevelBuilder {
  return { exact: new Map(), wildcards: new Map(), keyOnly: new Map(), keyPatterns: [], byRefName: new Map() };
}

/** The reference's name for a config path element: `key` or `key_value`. */
function refName(d: RawDescriptor): string {
  return d.value === '' ? d.key : `${d.key}_${d.value}`;
}

export function* addDescriptors(
  level: LevelBuilder,
  file: RawFile,
  descriptors: readonly RawDescriptor[],
  parentKey: string,
  parents: readonly RawDescriptor[],
  errors: ConfigError[],
  budget: { domain: DomainBuilder; max: number },
): Steps<void> {
  for (const raw of descriptors) {
    if (budget.domain.count >= budget.max) {
      if (budget.domain.count++ === budget.max) {
        errors.push(
          new ConfigError({
            file: file.name,
            ...raw.position,
            path: raw.path,
            reason: `domain '${budget.domain.name}' has more than ${budget.max} descriptors`,
          }),
        );
      }
      return;
    }
    budget.domain.count++;
    const name = refName(raw);
    const statsKey = `${parentKey}.${name}`;
    const previous = level.byRefName.get(name);
    if (previous !== undefined) {
      errors.push(
        new ConfigError({
          file: file.name,
          ...raw.position,
          path: raw.path,
          reason: `duplicate descriptor composite key '${statsKey}' (first defined at ${previous.file}:${previous.raw.position.line})`,
        }),
      );
      continue;
    }
    const chain = [...parents, raw];
    const validity = parents.length === 0 ? narrow(file.validity, raw.validity) : raw.validity;
    const node: NodeBuilder = { raw, file: file.name, ...(validity !== undefined ? { validity } : {}) };
    level.byRefName.set(name, node);
    if (raw.rule !== undefined) {
      node.rule = compileRule(raw, statsKey, `${file.name}:${raw.position.line}`);
      budget.domain.rules.push({ rule: node.rule, raw, chain, file: file.name, validity: chainValidity(file, chain) });
    }
    if (isKeyPattern(raw.key)) level.keyPatterns.push(node);
    else if (raw.value === '') level.keyOnly.set(raw.key, node);
    else if (isWildcard(raw.value)) {
      const list = level.wildcards.get(raw.key) ?? [];
      list.push(node);
      level.wildcards.set(raw.key, list);
    } else {
      const byValue = level.exact.get(raw.key) ?? new Map<string, NodeBuilder>();
      byValue.set(raw.value, node);
      level.exact.set(raw.key, byValue);
    }
    yield;
    if (raw.descriptors.length > 0) yield* addDescriptors((node.children = newLevel()), file, raw.descriptors, statsKey, chain, errors, budget);
  }
}

function chainValidity(file: RawFile, chain: readonly RawDescriptor[]): Validity | undefined {
  let validity = file.validity;
  for (const d of chain) validity = narrow(validity, d.validity);
  return validity;
}

function compileRule(raw: RawDescriptor, statsKey: string, source: string): CompiledRule {
  const rule = raw.rule!;
  const limits: CompiledLimit[] = rule.limits.map((l) =>
    Object.freeze({
      ...(l.name !== undefined ? { name: l.name } : {}),
      requestsPerUnit: l.requestsPerUnit,
      windowMs: l.windowMs,
      unit: l.unit,
      algorithm: l.algorithm,
      burst: l.burst,
      softRequestsPerUnit: l.softRequestsPerUnit,
      ...(l.onLimit !== undefined ? { onLimit: l.onLimit } : {}),
      ...(l.throttling !== undefined ? { throttling: Object.freeze({ ...l.throttling }) } : {}),
      ...(l.banMs !== undefined ? { banMs: l.banMs } : {}),
      ...(l.shares !== undefined ? { shares: Object.freeze({ ...l.shares }) } : {}),
      ...(l.lease !== undefined ? { lease: Object.freeze({ ...l.lease }) } : {}),
      ...(l.countEveryHit === true ? { countEveryHit: true as const } : {}),
      ...(l.capacity !== undefined ? { capacity: Object.freeze({ ...l.capacity }) } : {}),
      ...(l.predictCost !== undefined ? { predictCost: Object.freeze({ ...l.predictCost }) } : {}),
      ...(l.calendar !== undefined ? { calendar: l.calendar } : {}),
      ...(l.maxValues !== undefined ? { maxValues: l.maxValues } : {}),
    }),
  );
  return Object.freeze({
    statsKey,
    source,
    unlimited: rule.unlimited,
    limits: Object.freeze(limits),
    replaces: Object.freeze([...rule.replaces]),
    shadowMode: raw.shadowMode,
    quotaMode: raw.quotaMode,
    detailedMetric: raw.detailedMetric,
    shareThreshold: raw.shareThreshold,
    ...(raw.metadata !== undefined ? { metadata: raw.metadata } : {}),
  });
}

function hasNodes(c: LevelBuilder | undefined): c is LevelBuilder {
  return c !== undefined && c.exact.size + c.wildcards.size + c.keyOnly.size + c.keyPatterns.length > 0;
}

function* freezeNode(b: NodeBuilder, sawValueToMetric: () => void): Steps<IndexNode> {
  if (b.raw.valueToMetric) sawValueToMetric();
  const children = hasNodes(b.children) ? yield* freezeLevel(b.children, sawValueToMetric) : undefined;
  yield;
  return Object.freeze({
    key: b.raw.key,
    value: b.raw.value,
    ...(isWildcard(b.raw.value) ? { glob: compileGlob(b.raw.value) } : {}),
    ...(b.validity !== undefined ? { validity: b.validity } : {}),
    ...(b.rule !== undefined ? { rule: b.rule } : {}),
    shareThreshold: b.raw.shareThreshold,
    valueToMetric: b.raw.valueToMetric,
    ...(children !== undefined ? { children } : {}),
  });
}

export function* freezeLevel(level: LevelBuilder, sawValueToMetric: () => void): Steps<IndexLevel> {
  const exact = new Map<string, ReadonlyMap<string, IndexNode>>();
  for (const [key, byValue] of level.exact) {
    const frozen = new Map<string, IndexNode>();
    for (const [value, b] of byValue) frozen.set(value, yield* freezeNode(b, sawValueToMetric));
    exact.set(key, frozen);
  }
  const wildcards = new Map<string, readonly IndexNode[]>();
  for (const [key, list] of level.wildcards) {
    const frozen: IndexNode[] = [];
    for (const b of list) frozen.push(yield* freezeNode(b, sawValueToMetric));
    wildcards.set(key, Object.freeze(frozen));
  }
  const keyOnly = new Map<string, IndexNode>();
  for (const [key, b] of level.keyOnly) keyOnly.set(key, yield* freezeNode(b, sawValueToMetric));
  const keyPatterns: IndexNode[] = [];
  for (const b of level.keyPatterns) keyPatterns.push(yield* freezeNode(b, sawValueToMetric));
  return Object.freeze({ exact, wildcards, keyOnly, keyPatterns: Object.freeze(keyPatterns) });
}

/** A domain's rules in config order (files in load order, then by position), for describe(). */
export function rulesInConfigOrder(d: DomainBuilder): readonly RuleEntry[] {
  const fileOrder = new Map(d.files.map((f, i) => [f, i] as const));
  // Already in that order but for aliased descriptors (an alias carries its anchor's position): a stable sort of
  // an almost sorted list is linear.
  return d.rules.sort(
    (a, b) => fileOrder.get(a.file)! - fileOrder.get(b.file)! || a.raw.position.line - b.raw.position.line || a.raw.position.column - b.raw.position.column,
  );
}
