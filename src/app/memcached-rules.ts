/**
 * What memcached can count: fixed_window limits, hard or soft, with shares, shadow mode and count_every_hit.
 * Whatever needs state beside a count or several keys decided as one (the other algorithms, `lease`, `ban`,
 * elastic throttling, on_limit `degrade` and `delay`, `retry: exponential_backoff`) is refused when rules load
 * with BACKEND=memcached: at start (the service does not start) and at every reload (the rules in force stay),
 * one message per limit naming the rule's file and line.
 */
import type { ConfigDescription, DescribedLimitWithThrottling } from '../config/compile/describe-rules.js';
import type { CompiledConfig } from '../config/types.js';

/** Empty when every limit of `config` can run on memcached. */
export function memcachedRuleProblems(config: CompiledConfig): string[] {
  const problems: string[] = [];
  for (const domain of config.describe() as ConfigDescription) {
    for (const rule of domain.rules) {
      rule.limits.forEach((limit, i) => {
        const what = unsupported(limit);
        if (what.length === 0) return;
        const which = rule.limits.length > 1 ? ` (rate_limits[${i}])` : '';
        problems.push(
          `${rule.source}: ${rule.stats_key}${which}: ${what.join(', ')} cannot run on memcached (BACKEND=memcached counts fixed_window limits only; use BACKEND=redis)`,
        );
      });
    }
  }
  return problems;
}

function unsupported(limit: DescribedLimitWithThrottling): string[] {
  const out: string[] = [];
  if (limit.algorithm !== 'fixed_window') out.push(`algorithm ${limit.algorithm}`);
  if (limit.lease !== undefined) out.push('lease');
  if (limit.ban !== undefined) out.push('ban');
  if (limit.throttling !== undefined && 'elastic' in limit.throttling) out.push('elastic throttling');
  const action = limit.on_limit?.action;
  if (action === 'degrade' || action === 'delay') out.push(`on_limit action ${action}`);
  if (limit.on_limit?.retry === 'exponential_backoff') out.push('on_limit retry exponential_backoff');
  return out;
}
