/** The decision observer that also feeds the top limited keys (top-keys.ts): only rejected and near-limit descriptors reach it. */
import type { DecisionObserver } from '../core/observer.js';
import type { TopKeys } from './top-keys.js';

export function withTopKeys(observer: DecisionObserver, top: TopKeys | undefined): DecisionObserver {
  if (top === undefined) return observer;
  return {
    ...observer,
    onDescriptor(report) {
      observer.onDescriptor(report);
      if (report.overLimit || report.nearLimit) top.record(report);
    },
  };
}
