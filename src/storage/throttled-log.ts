/**
 * Log a recurring problem at most once per interval per message. A Redis outage makes every request and
 * every reconnect attempt fail; logging each would flood the logs and cost more than the requests.
 * The next line written for a message says how many were suppressed since the last one.
 */
import type { Clock } from '../vocab/clock.js';

/** Where storage code reports problems; the composition root passes its logger. */
export type LogFn = (message: string, error?: unknown) => void;

export interface ThrottledLogOptions {
  readonly log: LogFn;
  readonly clock: Clock;
  /** Minimum time between two lines with the same message (default 10 s). */
  readonly intervalMs?: number;
  /** Distinct messages remembered (default 100); beyond that the oldest is forgotten. */
  readonly maxMessages?: number;
}

export function throttledLog(options: ThrottledLogOptions): LogFn {
  const interval = options.intervalMs ?? 10_000;
  const maxMessages = options.maxMessages ?? 100;
  const seen = new Map<string, { lastMs: number; suppressed: number }>();
  return (message, error) => {
    const now = options.clock.nowMs();
    const entry = seen.get(message);
    if (entry && now - entry.lastMs < interval) {
      entry.suppressed++;
      return;
    }
    const suffix = entry && entry.suppressed > 0 ? ` (${entry.suppressed} more since the last report)` : '';
    seen.delete(message);
    seen.set(message, { lastMs: now, suppressed: 0 });
    if (seen.size > maxMessages) seen.delete(seen.keys().next().value!);
    options.log(message + suffix, error);
  };
}
