/**
 * ratelimit_rule_limit: the configured limit of every rule in use, as a gauge, so that a dashboard can plot a
 * rule's use (ratelimit_hits_total) against its limit. Labels domain and key (the rule's stats key, as the
 * per-rule counters carry it) and window (as /rules writes it: 1s, 1m, 20m, 1d); one series per limit of a
 * rule. Values come from the rules alone, never from requests, so the series are bounded by the rules; they
 * are computed when read (nothing is stored per rule) and follow every reload.
 */
import { Gauge, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';

type Labels = 'domain' | 'key' | 'window';

/** One configured limit: the rule's stats key, its window as written, requests per window. */
export interface ConfiguredLimit {
  readonly domain: string;
  readonly key: string;
  readonly window: string;
  readonly requestsPerUnit: number;
}

class RuleLimitGauge extends Gauge<Labels> {
  limits: readonly ConfiguredLimit[] = [];

  override async get(): Promise<MetricObjectWithValues<MetricValue<Labels>>> {
    const got = await super.get();
    const seen = new Set<string>();
    const values: MetricValue<Labels>[] = [];
    for (const l of this.limits) {
      const id = `${l.domain}\0${l.key}\0${l.window}`;
      if (seen.has(id)) continue; // two limits of one window on one rule: the first, as the engine reports it
      seen.add(id);
      values.push({ value: l.requestsPerUnit, labels: { domain: l.domain, key: l.key, window: l.window } });
    }
    got.values = values;
    return got;
  }
}

const HELP = 'The configured limit of each rule in use: requests per window, by domain, key (the stats key) and window (1s, 1m, 20m, ...).';

/** Registers the gauge; returns how to install the limits of the rules in use (at start and after every reload). */
export function ruleLimitGauge(registers: Registry[]): (limits: readonly ConfiguredLimit[]) => void {
  const gauge = new RuleLimitGauge({ name: 'ratelimit_rule_limit', help: HELP, labelNames: ['domain', 'key', 'window'] as const, registers });
  return (limits) => {
    gauge.limits = limits;
  };
}
