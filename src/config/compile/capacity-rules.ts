/**
 * The capacity limits of a loaded rule set, as the capacity client holds them (src/capacity-client/sidecar-shares.ts): one
 * entry per limit with `capacity:`, with its ceiling (requests_per_unit) and window. Read from the config's
 * description (the same view /rules serves), after each successful load.
 */
import type { CapacityFallback } from '../../vocab/capacity-rule.js';
import type { ConfigDescription } from './describe-rules.js';
import type { CompiledConfig } from '../types.js';

export interface CapacityLimitSpec {
  readonly resource: string;
  readonly fallback: CapacityFallback;
  readonly wants: 'observed' | number;
  readonly minWants: number;
  readonly headroomPercent: number;
  readonly ceiling: number;
  readonly windowMs: number;
  /** The rule's stats key (for logs). */
  readonly rule: string;
}

export function capacityLimitsOf(config: CompiledConfig): CapacityLimitSpec[] {
  const out: CapacityLimitSpec[] = [];
  for (const domain of config.describe() as ConfigDescription) {
    for (const rule of domain.rules) {
      for (const l of rule.limits) {
        const c = l.capacity;
        if (c === undefined) continue;
        out.push({
          resource: c.resource,
          fallback: c.fallback as CapacityFallback,
          wants: c.wants === 'observed' ? 'observed' : Number(c.wants),
          minWants: c.min_wants,
          headroomPercent: Number.parseFloat(c.headroom),
          ceiling: l.requests_per_unit,
          windowMs: l.window_ms,
          rule: rule.stats_key,
        });
      }
    }
  }
  return out;
}
