/** `lease:` in the rules: the forms accepted, what they compile to, defaults, and what /rules shows. */
import { describe, expect, it } from 'vitest';
import { compile, domainOf, entries } from '../config/support.js';

const config = compile({
  'l.yaml': `domain: leases
descriptors:
  - key: percent
    rate_limit: {unit: minute, requests_per_unit: 1000, lease: {size: 5%, ttl: 1s}}
  - key: count
    rate_limit: {unit: second, requests_per_unit: 1000, algorithm: token_bucket, lease: {size: 50, ttl: 250ms}}
  - key: defaults
    rate_limit: {unit: hour, requests_per_unit: 1000, algorithm: sliding_window_counter, lease: {}}
  - key: small
    rate_limit: {unit: hour, requests_per_unit: 10, lease: {size: 0.5%}}
  - key: several
    rate_limits:
      - {unit: second, requests_per_unit: 100, lease: {size: 10%, ttl: 2m}}
      - {unit: day, requests_per_unit: 100000}
`,
});
const d = domainOf(config, 'leases');
const limitsOf = (key: string) => d.lookup(entries(key))!.rule.limits;

describe('lease config', () => {
  it('turns a percentage of requests_per_unit into units, at least 1', () => {
    expect(limitsOf('percent')[0]!.lease).toEqual({ size: 50, ttlMs: 1000 });
    expect(limitsOf('small')[0]!.lease).toEqual({ size: 1, ttlMs: 1000 });
  });

  it('takes a count and a ttl in ms, s or m', () => {
    expect(limitsOf('count')[0]!.lease).toEqual({ size: 50, ttlMs: 250 });
    expect(limitsOf('several').map((l) => l.lease)).toEqual([{ size: 10, ttlMs: 120_000 }, undefined]);
  });

  it('defaults to 5% and 1s', () => {
    expect(limitsOf('defaults')[0]!.lease).toEqual({ size: 50, ttlMs: 1000 });
  });

  it('shows the lease at /rules', () => {
    const described = config.describe() as { rules: { stats_key: string; limits: { lease?: unknown }[] }[] }[];
    const rule = described[0]!.rules.find((r) => r.stats_key === 'leases.count')!;
    expect(rule.limits[0]!.lease).toEqual({ size: 50, ttl_ms: 250 });
  });
});
