/**
 * A per-rule counter (labels domain and key) whose configured series read as 0 until first counted. Every rule
 * in use has its series from the start, but a series is stored in prom-client only once a hit is counted on it:
 * the others are added, at 0, to each read (scrape or get()). Installing 100,000 rules thus stores nothing per
 * rule (creating 6 label sets per rule took seconds of the event loop and about a kilobyte a rule), and a
 * series removed from the rules simply stops being read.
 */
import { Counter, type CounterConfiguration, type MetricObjectWithValues, type MetricValue } from 'prom-client';

type Labels = 'domain' | 'key';

/** The stats keys of the rules in use, by domain (metrics-labels.ts SeriesBounds.configuredKeys). */
export type ConfiguredKeys = () => ReadonlyMap<string, ReadonlySet<string>>;

export class ConfiguredCounter extends Counter<Labels> {
  constructor(
    config: CounterConfiguration<Labels>,
    private readonly configured: ConfiguredKeys,
  ) {
    super(config);
  }

  override async get(): Promise<MetricObjectWithValues<MetricValue<Labels>>> {
    const got = await super.get();
    const counted = new Map<string, Set<string>>();
    for (const v of got.values) {
      const domain = String(v.labels.domain);
      let keys = counted.get(domain);
      if (keys === undefined) counted.set(domain, (keys = new Set()));
      keys.add(String(v.labels.key));
    }
    const values = got.values;
    for (const [domain, keys] of this.configured()) {
      const seen = counted.get(domain);
      for (const key of keys) if (seen === undefined || !seen.has(key)) values.push({ value: 0, labels: { domain, key } });
    }
    return got;
  }

  /** Removes the stored series whose (domain, key) id (`${domain}\0${key}`) is in `removed`. */
  removeStored(removed: ReadonlySet<string>): void {
    const stored = (this as unknown as { hashMap: Record<string, { labels: Partial<Record<Labels, string | number>> }> }).hashMap;
    for (const [hash, series] of Object.entries(stored)) {
      if (removed.has(`${series.labels.domain}\0${series.labels.key}`)) delete stored[hash];
    }
  }
}

/** Removes the series of `removed` from every counter: one pass over the series counted so far, however many are removed. */
export function removeSeries(counters: readonly ConfiguredCounter[], removed: readonly { readonly domain: string; readonly key: string }[]): void {
  if (removed.length === 0) return;
  const ids = new Set(removed.map((l) => `${l.domain}\0${l.key}`));
  for (const c of counters) c.removeStored(ids);
}
