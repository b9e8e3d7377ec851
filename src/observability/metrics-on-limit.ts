/**
 * The at-the-limit actions' metrics (on_limit delay and degrade), per domain: requests delayed and how long,
 * delayed calls that ended before their slot, requests admitted degraded.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import type { DecisionObserver } from '../core/observer.js';
import type { SeriesBounds } from './metrics-labels.js';

export function onLimitMetrics(registers: Registry[], bounds: SeriesBounds): Pick<DecisionObserver, 'onAtLimit' | 'onDelayReleased'> {
  const delayed = new Counter({
    name: 'ratelimit_on_limit_delayed_total',
    help: 'Requests admitted by on_limit delay: answered OK once their reserved slot came.',
    labelNames: ['domain'] as const,
    registers,
  });
  const delays = new Histogram({
    name: 'ratelimit_on_limit_delay_seconds',
    help: 'How long on_limit delay held admitted requests for their reserved slot.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const delayReleased = new Counter({
    name: 'ratelimit_on_limit_delay_released_total',
    help: 'Delayed requests whose call ended (cancelled, deadline) before their slot came: result released = their reserved hits were given back to the store, failed = the store could not take them.',
    labelNames: ['domain', 'result'] as const,
    registers,
  });
  const degraded = new Counter({
    name: 'ratelimit_on_limit_degraded_total',
    help: 'Requests over a limit admitted by on_limit degrade (with its request headers).',
    labelNames: ['domain'] as const,
    registers,
  });
  return {
    onAtLimit(domain, action, delayMs) {
      if (action === 'degraded') degraded.inc({ domain: bounds.domain(domain) });
      else {
        delayed.inc({ domain: bounds.domain(domain) });
        delays.observe(delayMs / 1000);
      }
    },
    onDelayReleased(domain, released) {
      delayReleased.inc({ domain: bounds.domain(domain), result: released ? 'released' : 'failed' });
    },
  };
}
