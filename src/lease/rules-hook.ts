/**
 * What the lease room does when rules are (re)loaded: with BACKEND=memory, `lease` is accepted and ignored
 * (memory is already local), with one warning per load naming the rules; with Redis, every lease is given
 * back after a reload that changed the rules (a limit, window or lease may have changed), and claimed again
 * under the new rules by the next request.
 */
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import type { CompiledConfig } from '../config/types.js';
import type { CounterStore } from '../storage/counter-store.js';
import { LeaseStore } from './lease-store.js';

export interface LeaseRulesHookOptions {
  readonly backend: 'memory' | 'redis' | 'memcached';
  readonly store: CounterStore;
  readonly warn: (message: string, fields: Record<string, unknown>) => void;
}

/** Stats keys of the rules with a `lease` (for the warning). */
export function rulesWithLeases(config: CompiledConfig): string[] {
  const described = config.describe() as ConfigDescription;
  return described.flatMap((d) => d.rules.filter((r) => r.limits.some((l) => l.lease !== undefined)).map((r) => r.stats_key));
}

/** Call after the first load (`initial`) and after every successful reload that changed the rules. */
export function leaseRulesHook(options: LeaseRulesHookOptions): (config: CompiledConfig, initial: boolean) => Promise<void> {
  return async (config, initial) => {
    if (options.backend === 'memory') {
      const rules = rulesWithLeases(config);
      if (rules.length > 0) {
        options.warn('`lease` is ignored with BACKEND=memory: the in-memory store already decides locally', { rules: rules.slice(0, 20), count: rules.length });
      }
      return;
    }
    if (!initial && options.store instanceof LeaseStore) await options.store.giveBackAll();
  };
}
