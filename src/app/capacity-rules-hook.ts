/**
 * Wiring of the rules whose limit is a capacity share (docs/capacity-client.md): the capacity
 * client holding one resource per resource the rules name (src/capacity-client/sidecar-shares.ts), kept in step with each
 * successful rules load, and the store decorator that decides those limits in process (src/core/capacity-store.ts).
 */
import { SidecarShares } from '../capacity-client/sidecar-shares.js';
import { capacityLimitsOf } from '../config/compile/capacity-rules.js';
import type { CompiledConfig } from '../config/types.js';
import type { Clock } from '../vocab/clock.js';
import { CapacityRuleStore } from '../core/capacity-store.js';
import type { CounterStore } from '../storage/counter-store.js';

export interface CapacityRulesOptions {
  /** CAPACITY_SERVER: host:port of the capacity service (ours or Doorman); empty: limits keep their fallback. */
  readonly servers: readonly string[];
  /** CAPACITY_CLIENT_ID ('' = host:pid:random). */
  readonly clientId: string;
  readonly clock: Clock;
  readonly warn: (message: string, fields: Record<string, unknown>) => void;
}

export interface CapacityRules {
  /** The store to decide with: capacity limits in process, the rest by `inner`. Closing it releases the shares. */
  readonly store: CounterStore;
  /** Call after the first load and after every successful reload that changed the rules. */
  onLoad(config: CompiledConfig): void;
}

export function capacityRules(inner: CounterStore, options: CapacityRulesOptions): CapacityRules {
  const shares = new SidecarShares({
    servers: options.servers,
    ...(options.clientId !== '' ? { clientId: options.clientId } : {}),
    client: { onError: throttled(options.warn) },
  });
  return {
    store: new CapacityRuleStore(inner, shares, options.clock),
    onLoad(config) {
      const limits = capacityLimitsOf(config);
      if (limits.length > 0 && !shares.connected) {
        options.warn('rules have capacity limits but CAPACITY_SERVER is not set: each keeps its fallback share (pessimistic and safe: 0)', {
          rules: limits.slice(0, 20).map((l) => l.rule),
        });
      }
      const first = new Map<string, string>();
      for (const l of limits) {
        const key = `${l.windowMs}/${l.ceiling}/${l.fallback}/${String(l.wants)}/${l.minWants}/${l.headroomPercent}`;
        const seen = first.get(l.resource);
        if (seen === undefined) first.set(l.resource, key);
        else if (seen !== key)
          options.warn('capacity limits of one resource differ: the first one asks for the resource', { resource: l.resource, rule: l.rule });
      }
      shares.sync(limits);
    },
  };
}

/** One warning per 10 s at most about failing refreshes (the client retries on its own). */
function throttled(warn: CapacityRulesOptions['warn']): (error: Error & { code?: string }) => void {
  let last = 0;
  return (error) => {
    const now = Date.now();
    if (now - last < 10_000) return;
    last = now;
    warn('capacity server unreachable: shares fall back when their leases expire', { code: error.code, error: error.message });
  };
}
