/**
 * The `authz:` blocks of a rule set, per domain: one block per domain (a second one, in a merged domain's
 * other file, is an error naming both), compiled with its matchers (authz-matchers.ts) and frozen.
 */
import { compileStringMatch } from './authz-matchers.js';
import type { CompiledAuthz, CompiledAuthzAction, RawAuthz, RawAuthzAction } from '../authz-types.js';
import { ConfigError } from '../config-error.js';
import type { RawFile } from '../raw.js';

export class AuthzCollector {
  private readonly blocks = new Map<string, RawAuthz>();

  /** Takes the block of one file (after its domain was accepted); a second block for a domain is an error. */
  add(file: RawFile, errors: ConfigError[]): void {
    if (file.authz === undefined || file.domain === undefined) return;
    const earlier = this.blocks.get(file.domain);
    if (earlier !== undefined) {
      const { line, column } = file.authz;
      errors.push(
        new ConfigError({
          file: file.name,
          line,
          column,
          path: 'authz',
          reason: `domain '${file.domain}' already has an authz block (${earlier.source}); keep a domain's authz block in one of its files`,
        }),
      );
      return;
    }
    this.blocks.set(file.domain, file.authz);
  }

  /** The compiled blocks by domain (the regexes were checked while validating, so compiling cannot fail). */
  compile(): ReadonlyMap<string, CompiledAuthz> {
    const out = new Map<string, CompiledAuthz>();
    for (const [domain, raw] of this.blocks) out.set(domain, compileAuthz(raw));
    return out;
  }
}

export function compileAuthz(raw: RawAuthz): CompiledAuthz {
  return Object.freeze({
    source: raw.source,
    rateLimits: Object.freeze(raw.rateLimits.map((rl) => Object.freeze({ actions: Object.freeze(rl.actions.map(compileAction)) }))),
  });
}

function compileAction(a: RawAuthzAction): CompiledAuthzAction {
  if (a.type === 'header_value_match') {
    const headers = a.headers.map(({ match, ...h }) => Object.freeze({ ...h, ...(match ? { match: compileStringMatch(match) } : {}) }));
    return Object.freeze({ ...a, headers: Object.freeze(headers) });
  }
  if (a.type === 'query_parameter_value_match') {
    const params = a.params.map(({ match, ...p }) => Object.freeze({ ...p, ...(match ? { match: compileStringMatch(match) } : {}) }));
    return Object.freeze({ ...a, params: Object.freeze(params) });
  }
  return Object.freeze({ ...a });
}
