/**
 * LOG_LEVEL=debug: one line per decision, as envoyproxy/ratelimit logs each descriptor, the limit it applies
 * and its answer at debug level. Here it is one line: the domain, the overall code, and per descriptor its
 * entries as `(key=value),...`, its code and the limit that spoke with what is left. Descriptor values come
 * from clients: this level is for finding out why, not for production traffic.
 */
import type { DecisionObserver } from '../core/observer.js';
import type { DescriptorStatus, RateLimitRequest } from '../vocab/types.js';
import type { Logger } from './log.js';

function describeStatus(s: DescriptorStatus | undefined): string {
  if (s === undefined) return 'no status';
  if (s.currentLimit === undefined) return s.limitRemaining === 4_294_967_295 ? `${s.code}, unlimited` : `${s.code}, no limit applies`;
  const limit = s.currentLimit;
  const per = limit.unit === undefined ? `${limit.windowSeconds}s` : limit.unit.toLowerCase();
  const reset = s.durationUntilResetMs === undefined ? '' : `, reset in ${Math.ceil(s.durationUntilResetMs / 1000)}s`;
  return `${s.code}, ${limit.requestsPerUnit} per ${per}${limit.name === undefined ? '' : ` (${limit.name})`}, remaining ${s.limitRemaining}${reset}`;
}

export function describeDescriptors(request: RateLimitRequest, statuses: readonly DescriptorStatus[]): string[] {
  return request.descriptors.map((d, i) => `${d.entries.map((e) => `(${e.key}=${e.value})`).join(',')}: ${describeStatus(statuses[i])}`);
}

/** `observer` that also logs each decision at debug level; `observer` itself when debug lines are not written. */
export function withDecisionLog(observer: DecisionObserver, log: Logger, enabled: boolean): DecisionObserver {
  if (!enabled) return observer;
  return {
    ...observer,
    onDecided(request, decision) {
      observer.onDecided?.(request, decision);
      log.debug('decision', {
        domain: request.domain,
        code: decision.overallCode,
        hits: request.hitsAddend,
        descriptors: describeDescriptors(request, decision.statuses),
      });
    },
  };
}
