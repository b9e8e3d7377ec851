/**
 * Start phase: the counter store (memory or Redis), with the limits decided in process from a capacity
 * share and the quota leases, both fed the rules in force; then the xDS client, whose first set goes
 * through those hooks.
 */
import { leaseRulesHook } from '../lease/rules-hook.js';
import { componentLogger } from '../observability/log.js';
import type { CounterStore } from '../storage/counter-store.js';
import type { RedisStore } from '../storage/redis/redis-store.js';
import { capacityRules } from './capacity-rules-hook.js';
import type { StartContext } from './start-context.js';
import type { StartedRules } from './start-rules.js';
import { buildStore } from './store-factory.js';

export interface StartedStore {
  /** The store to decide with; closing it releases the capacity shares and closes the counters' store. */
  readonly store: CounterStore;
  /** BACKEND=redis: the counters' Redis, whose connection the quota service shares. */
  readonly counterRedis: RedisStore | undefined;
  /** Stops the xDS client (at once, or in its turn on the teardown). */
  readonly stopXds: () => Promise<void>;
}

export async function startStore({ settings, clock, log, metrics, teardown }: StartContext, rules: StartedRules): Promise<StartedStore> {
  let counterRedis: RedisStore | undefined;
  const stored = await buildStore(settings, { clock, log: componentLogger(log, 'store'), metrics, onRedis: (r) => (counterRedis = r) });
  // Limits with `capacity:` are decided in process from this replica's granted share (docs/capacity-client.md).
  const capacityLimits = capacityRules(stored, {
    servers: settings.capacityServer,
    clientId: settings.capacityClientId,
    clock,
    warn: (message, fields) => log.warn(message, fields),
  });
  const store = capacityLimits.store;
  teardown.defer('counter store', () => store.close());
  const leases = leaseRulesHook({ backend: settings.backend, store: stored, warn: (message, fields) => log.warn(message, fields) });
  rules.onChange.push(
    (config) => void leases(config, false),
    (config) => capacityLimits.onLoad(config),
  );
  capacityLimits.onLoad(rules.holder.config);
  await leases(rules.holder.config, true);
  const { xds } = rules;
  const stopXds = teardown.defer('xDS client', () => xds?.stop());
  await xds?.start(rules.holder);
  return { store, counterRedis, stopXds };
}
