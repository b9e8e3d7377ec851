/**
 * Throttling's metrics (docs/throttling.md): hits admitted above a limit or warned by soft throttling, borrowed
 * by elastic throttling, bans started and checks refused by a ban. Labels domain and criticality class only
 * (bounded: domains × 3).
 */
import { Counter, type Registry } from 'prom-client';
import type { DecisionObserver } from '../core/observer.js';
import type { SeriesBounds } from './metrics-labels.js';

export function throttlingMetrics(registers: Registry[], bounds: SeriesBounds): Pick<DecisionObserver, 'onThrottling'> {
  const labelNames = ['domain', 'class'] as const;
  const softExceeded = new Counter({
    name: 'ratelimit_soft_exceeded_hits_total',
    help: 'Hits admitted above a limit by soft throttling (marked with x-ratelimit-soft-exceeded).',
    labelNames,
    registers,
  });
  const softWarnings = new Counter({
    name: 'ratelimit_soft_warning_hits_total',
    help: 'Hits admitted above soft_requests_per_unit and within the limit (marked with x-ratelimit-soft-warning).',
    labelNames,
    registers,
  });
  const borrowed = new Counter({
    name: 'ratelimit_elastic_borrowed_hits_total',
    help: "Hits admitted above a limit by elastic throttling, on the rule's spare capacity.",
    labelNames,
    registers,
  });
  const bansStarted = new Counter({
    name: 'ratelimit_bans_started_total',
    help: 'Bans started by a rejection under a rule with `ban`.',
    labelNames,
    registers,
  });
  const banRejections = new Counter({
    name: 'ratelimit_ban_rejections_total',
    help: 'Limit checks rejected because their key was banned (not counted).',
    labelNames,
    registers,
  });
  return {
    onThrottling(domain, criticality, counts) {
      const l = { domain: bounds.domain(domain), class: criticality };
      if (counts.softExceeded > 0) softExceeded.inc(l, counts.softExceeded);
      if (counts.softWarnings > 0) softWarnings.inc(l, counts.softWarnings);
      if (counts.borrowed > 0) borrowed.inc(l, counts.borrowed);
      if (counts.bansStarted > 0) bansStarted.inc(l, counts.bansStarted);
      if (counts.banRejections > 0) banRejections.inc(l, counts.banRejections);
    },
  };
}
