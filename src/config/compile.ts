/**
 * compileConfigFiles: the pure entry point (no fs). Validates every file (validate.ts), then indexes the
 * descriptors of each domain (lookup.ts), reporting every error of every file at once. The result is frozen and
 * meant to be swapped whole on reload.
 */
import { createHash } from 'node:crypto';
import type { ConfigError } from './errors.js';
import { ConfigError as ConfigErrorClass, sortConfigErrors } from './errors.js';
import { describeConfig } from './describe.js';
import { AuthzCollector } from './compile-authz.js';
import { compileGlob, isKeyPattern, isWildcard } from './glob.js';
import { withDefaults } from './limits.js';
import type { ConfigLimits } from './limits.js';
import { DomainIndex } from './lookup.js';
import type { IndexLevel, IndexNode } from './lookup.js';
import type { RawDescriptor, RawFile } from './raw.js';
import type { CompiledConfig, CompiledDomain, CompiledLimit, CompiledRule } from './types.js';
import { validateFile } from './validate.js';

export interface CompileOptions {
  /** MERGE_DOMAIN_CONFIG: the same domain in several files merges their descriptors instead of being an error. */
  readonly mergeDomains: boolean;
  /** Bounds on file size, aliases, nesting and descriptors (limits.ts); unset ones take their defaults. */
  readonly limits?: Partial<ConfigLimits>;
}

/** `warnings` never stop a load: keys that envoyproxy/ratelimit accepts and ignores, so that its configs load unchanged. */
export type CompileResult = { ok: true; config: CompiledConfig; warnings: ConfigError[] } | { ok: false; errors: ConfigError[] };

/** A level under construction; frozen into an IndexLevel at the end. */
interface LevelBuilder {
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
  /** The descriptors from the domain root down to this one. */
  chain: readonly RawDescriptor[];
  file: string;
  rule?: CompiledRule;
  children: LevelBuilder;
}

interface DomainBuilder {
  name: string;
  /** Descriptors indexed so far (bounded by maxDescriptorsPerDomain). */
  count: number;
  files: string[];
  firstFile: string;
  root: LevelBuilder;
}

/** What validating one file gives: the costly, unbounded-input half of a load (a worker may do it, load-worker.ts). */
export interface ValidatedFile {
  readonly file: RawFile;
  readonly errors: readonly ConfigError[];
  readonly warnings: readonly ConfigError[];
}

export function compileConfigFiles(
  files: readonly { name: string; text: string }[],
  options: CompileOptions,
): CompileResult {
  const limits = withDefaults(options.limits);
  const validated = files.map(({ name, text }) => validateFile(name, text, limits));
  return indexValidatedFiles(validated, contentVersion(files), options);
}

/**
 * The second half of compileConfigFiles: cross-file checks and the frozen index, from files already validated
 * (in load order) and the content version of their texts. Linear in the descriptors (bounded by the limits).
 */
export function indexValidatedFiles(
  validated: readonly ValidatedFile[],
  version: string,
  options: CompileOptions,
): CompileResult {
  const errors: ConfigError[] = [];
  const warnings: ConfigError[] = [];
  const domains = new Map<string, DomainBuilder>();
  const limits = withDefaults(options.limits);
  const authz = new AuthzCollector();
  for (const { file, errors: fileErrors, warnings: fileWarnings } of validated) {
    const name = file.name;
    errors.push(...fileErrors);
    warnings.push(...fileWarnings);
    if (file.domain === undefined) continue;
    const existing = domains.get(file.domain);
    if (existing !== undefined && !options.mergeDomains) {
      errors.push(
        new ConfigErrorClass({
          file: name,
          ...file.domainPosition,
          path: 'domain',
          reason: `duplicate domain '${file.domain}' in config file (also in ${existing.firstFile}; set MERGE_DOMAIN_CONFIG=true to merge them)`,
        }),
      );
      continue;
    }
    const domain = existing ?? { name: file.domain, count: 0, files: [], firstFile: name, root: newLevel() };
    domain.files.push(name);
    domains.set(file.domain, domain);
    const budget = { domain, max: limits.maxDescriptorsPerDomain };
    addDescriptors(domain.root, file, file.descriptors, file.domain, [], errors, budget);
    authz.add(file, errors);
  }
  const order = validated.map((v) => v.file.name);
  if (errors.length > 0) return { ok: false, errors: sortConfigErrors(errors, order) };

  const compiled = new Map<string, CompiledDomain>();
  for (const d of domains.values()) {
    let anyValueToMetric = false;
    const root = freezeLevel(d.root, () => (anyValueToMetric = true));
    compiled.set(d.name, new DomainIndex(d.name, Object.freeze([...d.files]), root, anyValueToMetric));
  }
  const frozenDomains: ReadonlyMap<string, CompiledDomain> = compiled;
  const description = describeConfig([...domains.values()].map((d) => ({
    name: d.name,
    files: d.files,
    rules: collectRules(d.root, d.files),
  })));
  const config: CompiledConfig = Object.freeze({
    domains: frozenDomains,
    files: Object.freeze(order),
    version,
    describe: () => description,
    authz: authz.compile(),
  });
  return { ok: true, config, warnings: sortConfigErrors(warnings, order) };
}

/** sha256 over names and contents, length-prefixed so that no two file sets hash alike by concatenation. */
export function contentVersion(files: readonly { name: string; text: string }[]): string {
  const hash = createHash('sha256');
  for (const f of files) {
    hash.update(`${Buffer.byteLength(f.name)}:${f.name}${Buffer.byteLength(f.text)}:`);
    hash.update(f.text);
  }
  return hash.digest('hex');
}

function newLevel(): LevelBuilder {
  return { exact: new Map(), wildcards: new Map(), keyOnly: new Map(), keyPatterns: [], byRefName: new Map() };
}

/** The reference's name for a config path element: `key` or `key_value`. */
function refName(d: RawDescriptor): string {
  return d.value === '' ? d.key : `${d.key}_${d.value}`;
}

function addDescriptors(
  level: LevelBuilder,
  file: RawFile,
  descriptors: readonly RawDescriptor[],
  parentKey: string,
  parents: readonly RawDescriptor[],
  errors: ConfigError[],
  budget: { domain: DomainBuilder; max: number },
): void {
  for (const raw of descriptors) {
    if (budget.domain.count >= budget.max) {
      if (budget.domain.count++ === budget.max) {
        errors.push(
          new ConfigErrorClass({
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
    const statsKey = `${parentKey}.${refName(raw)}`;
    const previous = level.byRefName.get(refName(raw));
    if (previous !== undefined) {
      errors.push(
        new ConfigErrorClass({
          file: file.name,
          ...raw.position,
          path: raw.path,
          reason: `duplicate descriptor composite key '${statsKey}' (first defined at ${previous.file}:${previous.raw.position.line})`,
        }),
      );
      continue;
    }
    const chain = [...parents, raw];
    const node: NodeBuilder = { raw, chain, file: file.name, children: newLevel() };
    level.byRefName.set(refName(raw), node);
    if (raw.rule !== undefined) node.rule = compileRule(raw, statsKey, `${file.name}:${raw.position.line}`);
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
    addDescriptors(node.children, file, raw.descriptors, statsKey, chain, errors, budget);
  }
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

function freezeLevel(level: LevelBuilder, sawValueToMetric: () => void): IndexLevel {
  const node = (b: NodeBuilder): IndexNode => {
    if (b.raw.valueToMetric) sawValueToMetric();
    const c = b.children;
    const hasChildren = c.exact.size + c.wildcards.size + c.keyOnly.size + c.keyPatterns.length > 0;
    return Object.freeze({
      key: b.raw.key,
      value: b.raw.value,
      ...(isWildcard(b.raw.value) ? { glob: compileGlob(b.raw.value) } : {}),
      ...(b.rule !== undefined ? { rule: b.rule } : {}),
      shareThreshold: b.raw.shareThreshold,
      valueToMetric: b.raw.valueToMetric,
      ...(hasChildren ? { children: freezeLevel(b.children, sawValueToMetric) } : {}),
    });
  };
  const exact = new Map<string, ReadonlyMap<string, IndexNode>>();
  for (const [key, byValue] of level.exact) {
    exact.set(key, new Map([...byValue].map(([v, b]) => [v, node(b)] as const)));
  }
  const wildcards = new Map<string, readonly IndexNode[]>();
  for (const [key, list] of level.wildcards) wildcards.set(key, Object.freeze(list.map(node)));
  const keyOnly = new Map<string, IndexNode>();
  for (const [key, b] of level.keyOnly) keyOnly.set(key, node(b));
  const keyPatterns = Object.freeze(level.keyPatterns.map(node));
  return Object.freeze({ exact, wildcards, keyOnly, keyPatterns });
}

/** Every rule of a domain in config order (files in load order, depth first), for describe(). */
function collectRules(
  root: LevelBuilder,
  files: readonly string[],
): { rule: CompiledRule; raw: RawDescriptor; chain: readonly RawDescriptor[] }[] {
  const all: { rule: CompiledRule; raw: RawDescriptor; chain: readonly RawDescriptor[]; file: string }[] = [];
  const walk = (level: LevelBuilder): void => {
    const nodes = [
      ...[...level.exact.values()].flatMap((m) => [...m.values()]),
      ...[...level.wildcards.values()].flat(),
      ...level.keyOnly.values(),
      ...level.keyPatterns,
    ];
    for (const n of nodes) {
      if (n.rule !== undefined) all.push({ rule: n.rule, raw: n.raw, chain: n.chain, file: n.file });
      walk(n.children);
    }
  };
  walk(root);
  return all.sort(
    (a, b) =>
      files.indexOf(a.file) - files.indexOf(b.file) ||
      a.raw.position.line - b.raw.position.line ||
      a.raw.position.column - b.raw.position.column,
  );
}
