/** Helpers for the config tests: compile fixtures and summarise lookups as short, readable strings. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DescriptorEntry } from '../../../src/vocab/types.js';
import { compileConfigFiles } from '../../../src/config/index.js';
import type { CompiledConfig, CompiledDomain, CompiledLimit, RuleMatch } from '../../../src/config/index.js';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/config/', import.meta.url));

export function fixtureText(relative: string): string {
  return readFileSync(FIXTURES + relative, 'utf8');
}

/** Compiles inline YAML (or throws with every error message). */
export function compile(files: Record<string, string>, mergeDomains = false): CompiledConfig {
  const result = compileConfigFiles(
    Object.entries(files).map(([name, text]) => ({ name, text })),
    { mergeDomains },
  );
  if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
  return result.config;
}

export function domainOf(config: CompiledConfig, name: string): CompiledDomain {
  const domain = config.domains.get(name);
  if (domain === undefined) throw new Error(`no domain ${name}`);
  return domain;
}

/** `['k=v', 'k2=v2']` → entries (split at the first '='). */
export function entries(...pairs: string[]): DescriptorEntry[] {
  return pairs.map((p) => {
    const at = p.indexOf('=');
    return at < 0 ? { key: p, value: '' } : { key: p.slice(0, at), value: p.slice(at + 1) };
  });
}

export function describeLimit(l: CompiledLimit): string {
  const window = l.unit !== undefined && l.windowMs === unitMs(l.unit) ? l.unit : `${l.windowMs}ms`;
  const extra = l.algorithm === 'fixed_window' ? '' : ` ${l.algorithm}`;
  const burst = l.algorithm === 'token_bucket' || l.algorithm === 'leaky_bucket' ? ` burst ${l.burst}` : '';
  return `${l.requestsPerUnit}/${window}${extra}${burst}${l.name !== undefined ? ` (${l.name})` : ''}`;
}

function unitMs(unit: string): number {
  const seconds: Record<string, number> = {
    second: 1,
    minute: 60,
    hour: 3600,
    day: 86_400,
    week: 604_800,
    month: 2_592_000,
    year: 31_536_000,
  };
  return (seconds[unit] ?? 0) * 1000;
}

/** `rule statsKey → limits` for a lookup, or 'none'. */
export function summary(match: RuleMatch | undefined): string {
  if (match === undefined) return 'none';
  const r = match.rule;
  const limits = r.unlimited ? 'unlimited' : r.limits.map(describeLimit).join(' + ');
  const flags = [r.shadowMode ? 'shadow' : '', r.quotaMode ? 'quota' : ''].filter((f) => f !== '').join(',');
  return `${r.statsKey} → ${limits}${flags === '' ? '' : ` [${flags}]`}`;
}

export function lookup(domain: CompiledDomain, ...pairs: string[]): string {
  return summary(domain.lookup(entries(...pairs)));
}
