/**
 * Admission by predicted cost (docs/costs.md), per domain: admitted calls charged a prediction, settlements
 * (those that refunded counted again under refunds), and `predicted_cost` entries counted as ordinary charges.
 * The last are also logged, once per rule and reason (at most LOGGED_MAX lines in the process's life).
 */
import { Counter, type Registry } from 'prom-client';
import type { CostEvent, DecisionObserver } from '../core/observer.js';
import type { SeriesBounds } from './metrics-labels.js';

const LOGGED_MAX = 1000;

export function costMetrics(registers: Registry[], bounds: SeriesBounds): Pick<DecisionObserver, 'onCost'> {
  const predictions = new Counter({
    name: 'ratelimit_cost_predictions_total',
    help: 'Admitted calls of a predict_cost rule, each charged the predicted cost of its rule instead of its hits.',
    labelNames: ['domain'] as const,
    registers,
  });
  const settlements = new Counter({
    name: 'ratelimit_cost_settlements_total',
    help: 'Settlements of a predict_cost rule (a call carrying predicted_cost and the actual cost): the difference charged or refunded.',
    labelNames: ['domain'] as const,
    registers,
  });
  const refunds = new Counter({
    name: 'ratelimit_cost_refunds_total',
    help: 'Settlements whose actual cost was below the prediction: the difference given back to the count.',
    labelNames: ['domain'] as const,
    registers,
  });
  const ordinary = new Counter({
    name: 'ratelimit_cost_ordinary_charges_total',
    help: 'Calls carrying predicted_cost counted as an ordinary charge: reason unparsed (not a whole number from 1 to the most the rule can predict) or unpredicted (the rule has no predict_cost).',
    labelNames: ['domain', 'reason'] as const,
    registers,
  });
  return {
    onCost(domain, _statsKey, event: CostEvent) {
      const labels = { domain: bounds.domain(domain) };
      if (event === 'prediction') predictions.inc(labels);
      else if (event === 'settlement') settlements.inc(labels);
      else if (event === 'refund') {
        settlements.inc(labels);
        refunds.inc(labels);
      } else ordinary.inc({ ...labels, reason: event });
    },
  };
}

const REASONS: Readonly<Record<'unparsed' | 'unpredicted', string>> = {
  unparsed: 'its value is not a whole number from 1 to the most the rule can predict',
  unpredicted: 'its rule has no predict_cost',
};

/** `observer` that also logs a `predicted_cost` entry counted as an ordinary charge, once per rule and reason. */
export function withCostLog(observer: DecisionObserver, log: (message: string) => void): DecisionObserver {
  const seen = new Set<string>();
  return {
    ...observer,
    onCost(domain, statsKey, event) {
      observer.onCost?.(domain, statsKey, event);
      if (event !== 'unparsed' && event !== 'unpredicted') return;
      const id = `${event}\0${statsKey}`;
      if (seen.has(id) || seen.size >= LOGGED_MAX) return;
      seen.add(id);
      log(`a call for rule ${statsKey} carried predicted_cost, counted as an ordinary charge: ${REASONS[event]}`);
    },
  };
}
