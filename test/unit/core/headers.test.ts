import { describe, expect, it } from 'vitest';
import { buildResponseHeaders, type AppliedLimit } from '../../../src/core/headers.js';

const limit = (name: string | undefined, requestsPerUnit: number, windowMs: number) => ({
  ...(name ? { name } : {}),
  requestsPerUnit,
  windowMs,
  unit: undefined,
  algorithm: 'fixed_window' as const,
  burst: requestsPerUnit,
  softRequestsPerUnit: 0,
});

const burst: AppliedLimit = { limit: limit('burst', 10, 1000), outcome: { allowed: true, remaining: 4, resetMs: 300 }, policyName: 'burst', enforced: true };
const daily: AppliedLimit = {
  limit: limit('daily', 1000, 86_400_000),
  outcome: { allowed: false, remaining: 0, resetMs: 3_600_500 },
  policyName: 'daily',
  enforced: true,
};

describe('response headers', () => {
  it('sends retry-after (the longest wait of the rejecting limits) and the IETF draft fields', () => {
    expect(buildResponseHeaders([burst, daily], true, { mode: 'all', xRateLimit: false })).toEqual([
      { key: 'retry-after', value: '3601' },
      { key: 'ratelimit-policy', value: '"burst";q=10;w=1, "daily";q=1000;w=86400' },
      { key: 'ratelimit', value: '"burst";r=4;t=1, "daily";r=0;t=3601' },
    ]);
  });

  it('leaves the IETF fields off admitted responses with mode=limited, and everywhere with none', () => {
    expect(buildResponseHeaders([burst], false, { mode: 'limited', xRateLimit: false })).toEqual([]);
    expect(buildResponseHeaders([daily], true, { mode: 'none', xRateLimit: false })).toEqual([{ key: 'retry-after', value: '3601' }]);
  });

  it('builds the x-ratelimit trio as Envoy does: the lowest remaining speaks, every limit is a policy', () => {
    const h = buildResponseHeaders([burst, daily], true, { mode: 'none', xRateLimit: true });
    expect(h).toContainEqual({ key: 'x-ratelimit-limit', value: '1000, 10;w=1;name="burst", 1000;w=86400;name="daily"' });
    expect(h).toContainEqual({ key: 'x-ratelimit-remaining', value: '0' });
    expect(h).toContainEqual({ key: 'x-ratelimit-reset', value: '3601' });
  });

  it('names each policy by its own request, when one limit object serves changing policy names (the per-limit cache)', () => {
    const shared = limit(undefined, 5, 60_000);
    const as = (policyName: string, remaining: number): AppliedLimit => ({
      limit: shared,
      outcome: { allowed: true, remaining, resetMs: 1000 },
      policyName,
      enforced: true,
    });
    for (let round = 0; round < 2; round++) {
      expect(buildResponseHeaders([as('d.user_a', 4)], false, { mode: 'all', xRateLimit: false })).toEqual([
        { key: 'ratelimit-policy', value: '"d.user_a";q=5;w=60' },
        { key: 'ratelimit', value: '"d.user_a";r=4;t=1' },
      ]);
      // two names alternating in one request, one repeated: listed once each, in order
      expect(buildResponseHeaders([as('d.user_b', 3), as('d.user_a', 2), as('d.user_b', 1)], false, { mode: 'all', xRateLimit: false })).toEqual([
        { key: 'ratelimit-policy', value: '"d.user_b";q=5;w=60, "d.user_a";q=5;w=60' },
        { key: 'ratelimit', value: '"d.user_b";r=3;t=1, "d.user_a";r=2;t=1' },
      ]);
    }
  });

  it('escapes policy names into valid sf-strings', () => {
    const odd: AppliedLimit = { ...burst, policyName: 'a"b\\c\u00e9' };
    expect(buildResponseHeaders([odd], false, { mode: 'all', xRateLimit: false })[0]).toEqual({ key: 'ratelimit-policy', value: '"a\\"b\\\\c?";q=10;w=1' });
  });

  it('a shadow limit over its quota does not set retry-after', () => {
    const shadow = { ...daily, enforced: false };
    expect(buildResponseHeaders([burst, shadow], false, { mode: 'none', xRateLimit: false })).toEqual([]);
  });
});
