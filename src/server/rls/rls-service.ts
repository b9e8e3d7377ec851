/** The time a decision of the gRPC port may take (ShouldRateLimit, ext_authz Check): its deadline on the engine's clock. */
import type { Clock } from '../../vocab/clock.js';

/** The default longest wait of a decision, whatever deadline the caller sent (DECISION_MAX_WAIT_MS). */
export const MAX_BUDGET_MS = 10_000;

/**
 * When the store must have answered, on the engine's clock: the time left before the gRPC deadline
 * (`deadlineMs`, wall-clock epoch ms as the transport gives it; undefined when the caller sent no grpc-timeout)
 * less a margin, or the default budget when the caller set none, and never more than `maxWaitMs`. This one
 * deadline bounds the whole decision, Redis call included: no shorter per-command timeout may cut a call the
 * caller is still waiting for (it would be answered by FAILURE_MODE). Converting the budget, not the instant,
 * keeps an injected clock consistent.
 */
export function decisionDeadline(
  deadlineMs: number | undefined,
  margin: number | (() => number),
  defaultTimeoutMs: number,
  clock: Clock,
  maxWaitMs: number = MAX_BUDGET_MS,
): number {
  const budget = deadlineMs !== undefined ? deadlineMs - Date.now() - (typeof margin === 'number' ? margin : margin()) : defaultTimeoutMs;
  // A caller may send any grpc-timeout (hours); no decision is worth waiting for that long, and timers
  // past 2^31 ms would fire at once.
  return clock.nowMs() + Math.min(budget, maxWaitMs);
}
