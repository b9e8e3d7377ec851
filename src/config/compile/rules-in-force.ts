/**
 * Which rules of a description are in force at an instant (`valid_from` / `valid_until`), for GET /rules, the
 * status page, the metric of rules in force and ended, and `ratelimit check`'s warnings.
 */
import type { ConfigDescription, DescribedRule } from './describe-rules.js';

export type RuleTiming = 'in_force' | 'not_yet' | 'ended';

export function ruleTiming(rule: DescribedRule, nowMs: number): RuleTiming {
  if (rule.valid_from !== undefined && nowMs < Date.parse(rule.valid_from)) return 'not_yet';
  if (rule.valid_until !== undefined && nowMs >= Date.parse(rule.valid_until)) return 'ended';
  return 'in_force';
}

/** The description with `in_force` on every rule that has a validity (rules without one are always in force). */
export function withInForce(domains: ConfigDescription, nowMs: number): unknown {
  return domains.map((d) => ({
    ...d,
    rules: d.rules.map((r) => (r.valid_from === undefined && r.valid_until === undefined ? r : { ...r, in_force: ruleTiming(r, nowMs) === 'in_force' })),
  }));
}

/** Rules by timing, per domain. */
export function countTimings(domains: ConfigDescription, nowMs: number): Map<string, Record<RuleTiming, number>> {
  const out = new Map<string, Record<RuleTiming, number>>();
  for (const d of domains) {
    const counts = { in_force: 0, not_yet: 0, ended: 0 };
    for (const r of d.rules) counts[ruleTiming(r, nowMs)]++;
    out.set(d.name, counts);
  }
  return out;
}
