/**
 * The per-rule counters under the names envoyproxy/ratelimit's Prometheus export gives them (its statsd-exporter
 * mapping, src/stats/prom/default_mapper.yaml there), which dashboards built for it query (Envoy Gateway's
 * `global-ratelimit.json`): `ratelimit_service_rate_limit_<stat>` with labels `domain`, `key1` and, for a rule two
 * or more keys deep, `key2`: the first three dot-separated parts of the stats key, as that mapping splits
 * `ratelimit.service.rate_limit.<stats key>.<stat>`. Read from our own per-rule counters at scrape time, so the
 * two always agree and no request pays twice.
 */
import { Counter, type Registry } from 'prom-client';

const MIRRORED = [
  ['total_hits', 'ratelimit_hits_total'],
  ['over_limit', 'ratelimit_over_limit_total'],
  ['near_limit', 'ratelimit_near_limit_total'],
  ['within_limit', 'ratelimit_within_limit_total'],
  ['shadow_mode', 'ratelimit_shadow_mode_total'],
] as const;

/** domain, key1[, key2] of a stats key, as the reference's mapping reads `<domain>.<key1>.<key2>...`. */
export function referenceLabels(domain: string, statsKey: string): { domain: string; key1: string; key2?: string } {
  const parts = statsKey.split('.');
  if (parts.length < 2) return { domain, key1: statsKey }; // a folded key (`other`) has no domain part
  return parts.length === 2 ? { domain: parts[0]!, key1: parts[1]! } : { domain: parts[0]!, key1: parts[1]!, key2: parts[2]! };
}

/** Registers the mirrors of `source` (our per-rule counters by name), read whenever the registry is scraped. */
export function referenceRuleCounters(registers: Registry[], source: (name: string) => Counter<'domain' | 'key'>): void {
  for (const [stat, ours] of MIRRORED) {
    new Counter({
      name: `ratelimit_service_rate_limit_${stat}`,
      help: `${ours} under envoyproxy/ratelimit's Prometheus name (labels domain, key1, key2 from the stats key).`,
      labelNames: ['domain', 'key1', 'key2'] as const,
      registers,
      async collect() {
        const values = (await source(ours).get()).values;
        this.reset();
        for (const v of values) {
          const labels = referenceLabels(String(v.labels.domain ?? ''), String(v.labels.key ?? ''));
          this.inc(labels, v.value);
        }
      },
    });
  }
}
