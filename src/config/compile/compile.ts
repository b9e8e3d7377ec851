/**
 * compileConfigFiles: the pure entry point (no fs). Validates every file (validate.ts), then indexes the
 * descriptors of each domain (index-builder.ts, lookup.ts), reporting every error of every file at once. The
 * result is frozen and meant to be swapped whole on reload. The indexing half also runs in slices on the event
 * loop (indexSteps, slices.ts) for sets validated by a worker thread (load-in-worker.ts).
 */
import { createHash } from 'node:crypto';
import type { ConfigError } from '../config-error.js';
import { ConfigError as ConfigErrorClass, sortConfigErrors } from '../config-error.js';
import { describeSteps } from './describe-rules.js';
import { AuthzCollector } from './compile-authz.js';
import { addDescriptors, freezeLevel, newLevel, rulesInConfigOrder, type DomainBuilder } from './index-builder.js';
import { withDefaults } from '../limits.js';
import type { ConfigLimits } from '../limits.js';
import { DomainIndex } from './lookup.js';
import type { RawFile } from '../raw.js';
import { runAtOnce, type Steps } from '../slices.js';
import type { CompiledConfig, CompiledDomain } from '../types.js';
import { validateFile } from '../validate/validate.js';

export interface CompileOptions {
  /** MERGE_DOMAIN_CONFIG: the same domain in several files merges their descriptors instead of being an error. */
  readonly mergeDomains: boolean;
  /** Bounds on file size, aliases, nesting and descriptors (limits.ts); unset ones take their defaults. */
  readonly limits?: Partial<ConfigLimits>;
}

/** `warnings` never stop a load: keys that envoyproxy/ratelimit accepts and ignores, so that its configs load unchanged. */
export type CompileResult = { ok: true; config: CompiledConfig; warnings: ConfigError[] } | { ok: false; errors: ConfigError[] };

/** What validating one file gives: the costly, unbounded-input half of a load (a worker may do it, load-worker.ts). */
export interface ValidatedFile {
  readonly file: RawFile;
  readonly errors: readonly ConfigError[];
  readonly warnings: readonly ConfigError[];
}

export function compileConfigFiles(files: readonly { name: string; text: string }[], options: CompileOptions): CompileResult {
  const limits = withDefaults(options.limits);
  const validated = files.map(({ name, text }) => validateFile(name, text, limits));
  return indexValidatedFiles(validated, contentVersion(files), options);
}

/**
 * The second half of compileConfigFiles: cross-file checks and the frozen index, from files already validated
 * (in load order) and the content version of their texts. Linear in the descriptors (bounded by the limits).
 */
export function indexValidatedFiles(validated: readonly ValidatedFile[], version: string, options: CompileOptions): CompileResult {
  return runAtOnce(indexSteps(validated, version, options));
}

/** indexValidatedFiles a descriptor at a time (slices.ts). */
export function* indexSteps(validated: readonly ValidatedFile[], version: string, options: CompileOptions): Steps<CompileResult> {
  const build = new IndexBuild(options);
  for (const v of validated) yield* build.add(v);
  return yield* build.finish(version);
}

/** An index built file by file, in load order, as the files arrive (from a worker thread, load-in-worker.ts). */
export class IndexBuild {
  private readonly errors: ConfigError[] = [];
  private readonly warnings: ConfigError[] = [];
  private readonly domains = new Map<string, DomainBuilder>();
  private readonly order: string[] = [];
  private readonly authz = new AuthzCollector();
  private readonly maxDescriptors: number;

  constructor(private readonly options: CompileOptions) {
    this.maxDescriptors = withDefaults(options.limits).maxDescriptorsPerDomain;
  }

  *add({ file, errors: fileErrors, warnings: fileWarnings }: ValidatedFile): Steps<void> {
    const { errors, domains } = this;
    const name = file.name;
    this.order.push(name);
    errors.push(...fileErrors);
    this.warnings.push(...fileWarnings);
    if (file.domain === undefined) return;
    const existing = domains.get(file.domain);
    if (existing !== undefined && !this.options.mergeDomains) {
      errors.push(
        new ConfigErrorClass({
          file: name,
          ...file.domainPosition,
          path: 'domain',
          reason: `duplicate domain '${file.domain}' in config file (also in ${existing.firstFile}; set MERGE_DOMAIN_CONFIG=true to merge them)`,
        }),
      );
      return;
    }
    const domain = existing ?? { name: file.domain, count: 0, files: [], firstFile: name, root: newLevel(), rules: [] };
    domain.files.push(name);
    domains.set(file.domain, domain);
    yield* addDescriptors(domain.root, file, file.descriptors, file.domain, [], errors, { domain, max: this.maxDescriptors });
    this.authz.add(file, errors);
  }

  /** The compiled config of the files added, `version` their content version; or every error of every file. */
  *finish(version: string): Steps<CompileResult> {
    const order = this.order;
    if (this.errors.length > 0) return { ok: false, errors: sortConfigErrors(this.errors, order) };
    const compiled = new Map<string, CompiledDomain>();
    for (const d of this.domains.values()) {
      let anyValueToMetric = false;
      const root = yield* freezeLevel(d.root, () => (anyValueToMetric = true));
      compiled.set(d.name, new DomainIndex(d.name, Object.freeze([...d.files]), root, anyValueToMetric));
    }
    const frozenDomains: ReadonlyMap<string, CompiledDomain> = compiled;
    const description = yield* describeSteps([...this.domains.values()].map((d) => ({ name: d.name, files: d.files, rules: rulesInConfigOrder(d) })));
    const config: CompiledConfig = Object.freeze({
      domains: frozenDomains,
      files: Object.freeze([...order]),
      version,
      describe: () => description,
      authz: this.authz.compile(),
    });
    return { ok: true, config, warnings: sortConfigErrors(this.warnings, order) };
  }
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
