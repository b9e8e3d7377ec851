/**
 * Builds the counter store the settings ask for. Part of the composition root: the only place that
 * knows which concrete stores exist.
 *  - memory: the embedded MemoryStore.
 *  - redis:  RedisStore, behind the local over-limit cache, behind the failure-mode guard
 *            (open | closed | local, the last one deciding with a MemoryStore at limit ÷ EXPECTED_REPLICAS).
 */
import type { Clock } from './core/clock.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { Settings } from './settings.js';
import type { CounterStore } from './storage/counter-store.js';
import { MemoryStore } from './storage/memory/memory-store.js';

export async function buildStore(settings: Settings, deps: { clock: Clock; log: Logger; metrics: Metrics }): Promise<CounterStore> {
  if (settings.backend === 'memory') return new MemoryStore({ maxKeys: settings.memoryMaxKeys });
  void deps;
  throw new Error('BACKEND=redis is wired in a later step');
}
