/**
 * The metrics of rules in time: rules by validity (in force, not yet, ended) per domain, read at scrape time
 * from the rules in use and the service's clock, so they move as time passes without a reload; and the
 * requests past a limit's `max_values` bound, by rule and action. Labels come from the rules in use.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DecisionObserver } from '../core/observer.js';
import type { RulesSnapshot, SeriesBounds } from './metrics-labels.js';

export const RULE_VALIDITIES = ['in_force', 'not_yet', 'ended'] as const;
export type RuleValidity = (typeof RULE_VALIDITIES)[number];
const ACTIONS = ['overflow', 'reject'] as const;

/** Rules per domain by validity at the instant of the read (rules-in-force.ts countTimings). */
export type RuleValidityCounts = () => ReadonlyMap<string, Readonly<Record<RuleValidity, number>>>;

export interface RulesTimeMetrics {
  /** Exports the rules by validity, read at each scrape. */
  watchRuleValidity(counts: RuleValidityCounts): void;
  readonly onPastBound: NonNullable<DecisionObserver['onPastBound']>;
  /** Creates at zero the series of the rules with `max_values`, removes those of rules gone. */
  setRules(snapshot: RulesSnapshot): void;
}

export function rulesTimeMetrics(registers: Registry[], bounds: SeriesBounds): RulesTimeMetrics {
  let read: RuleValidityCounts = () => new Map();
  new Gauge({
    name: 'ratelimit_config_rules',
    help: 'Rules in use per domain by validity (valid_from / valid_until) at the time of the scrape: in_force, not_yet (before valid_from), ended (from valid_until on). A rule without an interval is in_force.',
    labelNames: ['domain', 'validity'] as const,
    registers,
    collect() {
      this.reset();
      for (const [domain, counts] of read()) for (const validity of RULE_VALIDITIES) this.set({ domain, validity }, counts[validity]);
    },
  });
  const pastBound = new Counter({
    name: 'ratelimit_max_values_past_bound_total',
    help: "Requests whose value came past a limit's max_values in its window, by rule (stats key) and action: overflow (counted in the rule's overflow counter), reject.",
    labelNames: ['domain', 'key', 'action'] as const,
    registers,
  });
  let series: { domain: string; key: string }[] = [];
  return {
    watchRuleValidity(counts) {
      read = counts;
    },
    onPastBound(domain, rule, action) {
      const l = bounds.labels(domain, rule);
      pastBound.inc({ domain: l.domain, key: l.key, action });
    },
    setRules(snapshot) {
      const next = snapshot.domains.flatMap((d) => (d.boundedKeys ?? []).map((key) => ({ domain: d.name, key })));
      const kept = new Set(next.map((s) => `${s.domain}\0${s.key}`));
      for (const s of series) if (!kept.has(`${s.domain}\0${s.key}`)) for (const action of ACTIONS) pastBound.remove({ ...s, action });
      for (const s of next) for (const action of ACTIONS) pastBound.inc({ ...s, action }, 0);
      series = next;
    },
  };
}
