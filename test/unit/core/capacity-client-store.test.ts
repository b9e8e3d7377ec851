/**
 * Capacity limits decided in process by the engine (core/capacity-store.ts) on a fake clock: a token bucket per
 * resource at the share (here the offline fallback of the real SidecarShares: optimistic = its wants, pessimistic
 * = 0), shared by every descriptor value of the rule, never above the ceiling, nothing sent to the store, and the
 * batch contract kept with ordinary limits beside it (a rejected request consumes nothing).
 */
import { describe, expect, it } from 'vitest';
import { SidecarShares } from '../../../src/capacity-client/sidecar-shares.js';
import { capacityLimitsOf } from '../../../src/config/compile/capacity-rules.js';
import { compileConfigFiles } from '../../../src/config/index.js';
import { CapacityRuleStore } from '../../../src/core/capacity-store.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { RateLimiter } from '../../../src/core/rate-limiter.js';
import type { RateLimitRequest } from '../../../src/vocab/types.js';
import type { CounterStore, LimitCheck } from '../../../src/storage/counter-store.js';
import { MemoryStore } from '../../../src/storage/memory/memory-store.js';

const RULES = `domain: c
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 100, capacity: {resource: backend, fallback: optimistic, wants: 10}}
  - key: closed
    rate_limit: {unit: second, requests_per_unit: 100, capacity: {resource: off, fallback: pessimistic}}
  - key: plain
    rate_limit: {unit: hour, requests_per_unit: 1}
`;

/** The memory store, recording what reaches it. */
class Recording implements CounterStore {
  readonly kind = 'memory';
  readonly seen: LimitCheck[] = [];
  private readonly inner = new MemoryStore({ maxKeys: 100 });
  apply(checks: readonly LimitCheck[], nowMs: number) {
    this.seen.push(...checks);
    return this.inner.apply(checks, nowMs);
  }
  isReady() {
    return true;
  }
  close() {
    return this.inner.close();
  }
}

function engine() {
  const result = compileConfigFiles([{ name: 'c.yaml', text: RULES }], { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.join('\n'));
  const clock = new FakeClock();
  const shares = new SidecarShares({ servers: [] });
  shares.sync(capacityLimitsOf(result.config));
  const inner = new Recording();
  const limiter = new RateLimiter({
    store: new CapacityRuleStore(inner, shares, clock),
    clock,
    config: () => result.config,
    keyPrefix: 't:',
    headers: { mode: 'none', xRateLimit: false },
    nearLimitRatio: 0.8,
  });
  return { limiter, clock, inner, shares };
}

const request = (...descriptors: [string, string][]): RateLimitRequest => ({
  domain: 'c',
  hitsAddend: 0,
  descriptors: descriptors.map(([key, value]) => ({ entries: [{ key, value }] })),
});

async function codes(limiter: RateLimiter, n: number, ...descriptors: [string, string][]): Promise<string> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await limiter.decide(request(...descriptors))).overallCode === 'OK' ? 'o' : 'x');
  return out.join('');
}

describe('capacity limits in the engine', () => {
  it('admits the share per window from one bucket for all values of the rule, refilled continuously, without the store', async () => {
    const { limiter, clock, inner, shares } = engine();
    expect(shares.grant('backend')).toBe(10);
    expect(await codes(limiter, 6, ['user', 'alice'])).toBe('oooooo');
    expect(await codes(limiter, 6, ['user', 'bob'])).toBe('ooooxx'); // one bucket of 10 for the replica
    clock.advance(100); // 10 per second: one more
    expect(await codes(limiter, 2, ['user', 'carol'])).toBe('ox');
    clock.advance(1_000);
    expect(await codes(limiter, 12, ['user', 'alice'])).toBe('ooooooooooxx'); // never more than one window's share
    expect(inner.seen).toEqual([]);
  });

  it('pessimistic without a lease admits nothing', async () => {
    const { limiter } = engine();
    expect(await codes(limiter, 3, ['closed', 'x'])).toBe('xxx');
  });

  it('keeps the batch contract with store limits: a request rejected by either consumes nothing from the other', async () => {
    const { limiter, clock } = engine();
    expect(await codes(limiter, 1, ['user', 'a'], ['plain', 'p'])).toBe('o'); // 1 of 10 tokens, 1 of 1 per hour
    expect(await codes(limiter, 5, ['user', 'a'], ['plain', 'p'])).toBe('xxxxx'); // the store rejects: tokens go back
    expect(await codes(limiter, 9, ['user', 'a'])).toBe('ooooooooo'); // all 9 left
    expect(await codes(limiter, 1, ['user', 'a'])).toBe('x');
    expect(await codes(limiter, 3, ['user', 'a'], ['plain', 'q'])).toBe('xxx'); // the capacity limit rejects...
    clock.advance(100);
    expect(await codes(limiter, 1, ['plain', 'q'])).toBe('o'); // ...and q's hour was not counted
  });
});
