/**
 * Bounds on what one rules load may cost, so that no file (hostile or mistaken) can hang or exhaust the service:
 * the size of a file, the nodes reached through YAML aliases (an "alias bomb" of ten lines expands to billions
 * of nodes), the nesting of YAML collections and of descriptors, and the descriptors of one domain.
 * Every limit that is hit is a ConfigError naming the file, line and column where it was hit.
 */

export interface ConfigLimits {
  /** Largest rules file read, in bytes (CONFIG_MAX_FILE_BYTES). */
  readonly maxFileBytes: number;
  /** Nodes of one file reached through aliases (`*name`, merge keys), counted as expanded. */
  readonly maxAliasNodes: number;
  /** Nesting of YAML collections (mappings and lists) in one file. */
  readonly maxYamlDepth: number;
  /** Nesting of `descriptors:` (a top-level descriptor is level 1). */
  readonly maxDescriptorDepth: number;
  /** Descriptors of one domain (all levels, all files of the domain). */
  readonly maxDescriptorsPerDomain: number;
}

export const DEFAULT_LIMITS: ConfigLimits = Object.freeze({
  maxFileBytes: 1024 * 1024,
  maxAliasNodes: 1_000_000,
  maxYamlDepth: 256,
  maxDescriptorDepth: 32,
  maxDescriptorsPerDomain: 100_000,
});

export function withDefaults(limits: Partial<ConfigLimits> | undefined): ConfigLimits {
  return limits === undefined ? DEFAULT_LIMITS : { ...DEFAULT_LIMITS, ...limits };
}

/**
 * The limits of a load whose options may also carry `maxFileBytes` (ReadOptions, CONFIG_MAX_FILE_BYTES): that
 * one bound serves both the reader and the validator, wherever the load runs (loader.ts, load-in-worker.ts).
 */
export function limitsOf(options: { readonly limits?: Partial<ConfigLimits>; readonly maxFileBytes?: number }): ConfigLimits {
  return withDefaults({
    ...options.limits,
    ...(options.maxFileBytes !== undefined ? { maxFileBytes: options.maxFileBytes } : {}),
  });
}

/**
 * Thrown when a file exceeds a limit: validating it further could cost without bound, so its validation stops
 * there (validate.ts turns it into the file's error).
 */
export class LimitExceeded extends Error {
  constructor(
    readonly offset: number,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'LimitExceeded';
  }
}
