/** A `predicted_cost` entry that cannot settle is logged once per rule and reason, and still reaches the metrics. */
import { describe, expect, it } from 'vitest';
import type { CostEvent } from '../../../src/core/observer.js';
import { withCostLog } from '../../../src/observability/metrics-cost.js';

describe('cost log', () => {
  it('logs an ordinary charge once per rule and reason, and passes every event on', () => {
    const events: CostEvent[] = [];
    const lines: string[] = [];
    const observer = withCostLog({ onDescriptor: () => {}, onDecision: () => {}, onCost: (_d, _k, e) => events.push(e) }, (m) => lines.push(m));
    for (let i = 0; i < 3; i++) {
      observer.onCost!('llm', 'llm.user', 'unparsed');
      observer.onCost!('llm', 'llm.user', 'unpredicted');
      observer.onCost!('llm', 'llm.other', 'unparsed');
      observer.onCost!('llm', 'llm.user', 'settlement');
    }
    expect(events).toHaveLength(12);
    expect(lines).toEqual([
      'a call for rule llm.user carried predicted_cost, counted as an ordinary charge: its value is not a whole number from 1 to the most the rule can predict',
      'a call for rule llm.user carried predicted_cost, counted as an ordinary charge: its rule has no predict_cost',
      'a call for rule llm.other carried predicted_cost, counted as an ordinary charge: its value is not a whole number from 1 to the most the rule can predict',
    ]);
  });
});
