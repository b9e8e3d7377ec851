/**
 * Label values of the per-domain and per-rule metrics come from the rules in use, never from requests: a
 * client that sends random domains or long descriptor values cannot create metric series.
 *
 * - domain: a configured domain name, or `unknown` for every other domain a request names.
 * - key: a configured rule's stats key. Stats keys built from request values (`detailed_metric`,
 *   `value_to_metric`, request-level limit overrides) are admitted up to `maxDetailed` distinct keys per
 *   domain; beyond that they are folded into the one key `other` (and counted, see metrics.ts).
 */
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import type { CompiledConfig } from '../config/types.js';
import type { ConfiguredLimit } from './metrics-limits.js';

export const UNKNOWN_DOMAIN = 'unknown';
export const OTHER_KEY = 'other';

/** What the metrics need to know of the rules: domain names and the stats keys of rules that count hits. */
export interface RulesSnapshot {
  readonly version: string;
  readonly domains: readonly { readonly name: string; readonly statsKeys: readonly string[]; readonly boundedKeys?: readonly string[] }[];
  /** Every limit of the rules that count hits (ratelimit_rule_limit). */
  readonly limits?: readonly ConfiguredLimit[];
}

export function rulesSnapshot(config: CompiledConfig): RulesSnapshot {
  const description = config.describe() as ConfigDescription;
  return {
    version: config.version,
    domains: description.map((d) => ({
      name: d.name,
      // Unlimited rules never count hits (the engine reports nothing for them): no series.
      statsKeys: [...new Set(d.rules.filter((r) => !r.unlimited).map((r) => r.stats_key))],
      // Rules with a `max_values` bound: their past-the-bound series.
      boundedKeys: [...new Set(d.rules.filter((r) => r.limits.some((l) => l.max_values !== undefined)).map((r) => r.stats_key))],
    })),
    limits: description.flatMap((d) =>
      d.rules.flatMap((r) => r.limits.map((l) => ({ domain: d.name, key: r.stats_key, window: l.window, requestsPerUnit: l.requests_per_unit }))),
    ),
  };
}

export interface SeriesLabels {
  readonly domain: string;
  readonly key: string;
  /** The request's stats key was folded into `other` (the cap was reached). */
  readonly folded: boolean;
}

export class SeriesBounds {
  private configured = new Map<string, ReadonlySet<string>>();
  /** Request-derived stats keys admitted so far, per configured domain (each set ≤ maxDetailed). */
  private detailed = new Map<string, Set<string>>();

  constructor(private maxDetailed: number) {}

  setMaxDetailed(max: number): void {
    this.maxDetailed = max;
  }

  /**
   * Installs the rules in use. Returns the (domain, key) pairs that no longer belong to any configured rule
   * or admitted detailed key, and the domains that disappeared, so their series can be removed.
   */
  setRules(snapshot: RulesSnapshot): { removedKeys: { domain: string; key: string }[]; removedDomains: string[] } {
    const removedKeys: { domain: string; key: string }[] = [];
    const removedDomains: string[] = [];
    const next = new Map(snapshot.domains.map((d) => [d.name, new Set(d.statsKeys)] as const));
    for (const [domain, keys] of this.configured) {
      const now = next.get(domain);
      if (now === undefined) {
        removedDomains.push(domain);
        for (const key of [...keys, ...(this.detailed.get(domain) ?? []), OTHER_KEY]) removedKeys.push({ domain, key });
        this.detailed.delete(domain);
        continue;
      }
      for (const key of keys) if (!now.has(key) && !this.detailed.get(domain)?.has(key)) removedKeys.push({ domain, key });
    }
    this.configured = next;
    return { removedKeys, removedDomains };
  }

  /** The stats keys of the configured rules, by domain (their series read as 0 until counted). */
  configuredKeys(): ReadonlyMap<string, ReadonlySet<string>> {
    return this.configured;
  }

  /** The domain label for a request's domain. */
  domain(name: string): string {
    return this.configured.has(name) ? name : UNKNOWN_DOMAIN;
  }

  /** The labels for a descriptor report. */
  labels(domainName: string, statsKey: string): SeriesLabels {
    const keys = this.configured.get(domainName);
    if (keys === undefined) return { domain: UNKNOWN_DOMAIN, key: OTHER_KEY, folded: false };
    if (keys.has(statsKey)) return { domain: domainName, key: statsKey, folded: false };
    let admitted = this.detailed.get(domainName);
    if (admitted === undefined) this.detailed.set(domainName, (admitted = new Set()));
    if (admitted.has(statsKey)) return { domain: domainName, key: statsKey, folded: false };
    if (admitted.size < this.maxDetailed) {
      admitted.add(statsKey);
      return { domain: domainName, key: statsKey, folded: false };
    }
    return { domain: domainName, key: OTHER_KEY, folded: true };
  }
}
