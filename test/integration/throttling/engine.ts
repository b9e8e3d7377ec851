/** The real engine (RateLimiter) over a given store and rules, with a FakeClock, for the throttling suites. */
import { compileConfigFiles } from '../../../src/config/index.js';
import type { CompiledConfig } from '../../../src/config/types.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import type { RateLimitDecision } from '../../../src/vocab/types.js';
import type { CounterStore } from '../../../src/storage/counter-store.js';

/** An instant 1 s into an hour (and a day), so fixed windows do not roll over unless the test moves the clock. */
export const T0 = 1_700_006_400_000 + 1_000;

export interface Engine {
  readonly limiter: RateLimiter;
  readonly clock: FakeClock;
  ask(entries: readonly (readonly [string, string])[], hits?: number): Promise<RateLimitDecision>;
}

export function compile(text: string): CompiledConfig {
  const result = compileConfigFiles([{ name: 'rules.yaml', text }], { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
  return result.config;
}

let run = 0;
/** `rules` may be swapped later with `reload` (as a config reload swaps the compiled set). */
export function engine(store: CounterStore, rules: string, domain: string): Engine & { reload(text: string): void } {
  let config = compile(rules);
  const clock = new FakeClock(T0);
  // A fresh key prefix per engine: suites share one Redis without seeing each other's counters.
  const keyPrefix = `rl:thr:${process.pid}:${Date.now()}:${run++}:`;
  const limiter = new RateLimiter({ store, clock, config: () => config, keyPrefix, headers: { mode: 'none', xRateLimit: false }, nearLimitRatio: 0.8 });
  return {
    limiter,
    clock,
    reload: (text) => void (config = compile(text)),
    ask: (entries, hits = 0) => limiter.decide({ domain, descriptors: [{ entries: entries.map(([key, value]) => ({ key, value })) }], hitsAddend: hits }),
  };
}

export function header(decision: RateLimitDecision, key: string): string | undefined {
  return decision.responseHeadersToAdd.find((h) => h.key === key)?.value;
}

/** Sends `n` requests one after the other; the number admitted. */
export async function admitted(e: Engine, n: number, entries: readonly (readonly [string, string])[]): Promise<number> {
  let ok = 0;
  for (let i = 0; i < n; i++) if ((await e.ask(entries)).overallCode === 'OK') ok++;
  return ok;
}
