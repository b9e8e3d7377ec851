/**
 * `capacity:` on a rate_limit (the limit is this replica's granted share of a capacity resource): what loads, with
 * its defaults, as /rules shows it and as the capacity client holds it; and every mistake named by file, line,
 * column and field with the exact message.
 */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import { capacityLimitsOf } from '../../../src/config/compile/capacity-rules.js';
import type { ConfigDescription } from '../../../src/config/compile/describe-rules.js';

function compile(text: string) {
  return compileConfigFiles([{ name: 'rules.yaml', text }], { mergeDomains: false });
}

const VALID = `domain: d
descriptors:
  - key: api
    rate_limit: {unit: second, requests_per_unit: 500, capacity: {resource: api-backend}}
  - key: batch
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: token_bucket, capacity: {resource: r2, fallback: optimistic, wants: 40, min_wants: 2, headroom: 50%}}
`;

describe('capacity limits in the rules', () => {
  it('loads with defaults (fallback safe, wants observed, min_wants 1, headroom 20%) as a token bucket with the ceiling', () => {
    const result = compile(VALID);
    if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
    const limits = (result.config.describe() as ConfigDescription)[0]!.rules.map((r) => r.limits[0]);
    expect(limits[0]).toMatchObject({
      requests_per_unit: 500,
      algorithm: 'token_bucket',
      burst: 500,
      capacity: { resource: 'api-backend', fallback: 'safe', wants: 'observed', min_wants: 1, headroom: '20%' },
    });
    expect(capacityLimitsOf(result.config)).toEqual([
      { resource: 'api-backend', fallback: 'safe', wants: 'observed', minWants: 1, headroomPercent: 20, ceiling: 500, windowMs: 1000, rule: 'd.api' },
      { resource: 'r2', fallback: 'optimistic', wants: 40, minWants: 2, headroomPercent: 50, ceiling: 100, windowMs: 60_000, rule: 'd.batch' },
    ]);
  });

  it('names each mistake by file, line, column and field', () => {
    const result = compile(`domain: d
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 5, capacity: {}}
  - key: b
    rate_limit: {unit: second, capacity: {resource: x}}
  - key: c
    rate_limit:
      unit: second
      requests_per_unit: 5
      algorithm: fixed_window
      lease: {size: 1}
      capacity: {resource: x, fallback: maybe, wants: lots, headroom: 5, min_wants: -1, resourse: y}
  - key: d
    rate_limit: {unlimited: true, capacity: {resource: x}}
  - key: e
    rate_limit: {unit: second, requests_per_unit: 5, capacity: api}
  - key: f
    rate_limit: {unit: second, requests_per_unit: 5, capacity: {resource: ""}}
`);
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.errors.map(String)).toEqual([
      'rules.yaml:4:54: descriptors[0].rate_limit.capacity.resource: capacity needs a resource: the capacity service resource id, e.g. {resource: api-backend}',
      'rules.yaml:6:32: descriptors[1].rate_limit.requests_per_unit: a capacity limit needs requests_per_unit ≥ 1: the most this replica asks for and admits per window',
      "rules.yaml:11:18: descriptors[2].rate_limit.algorithm: a capacity limit is decided by a token bucket refilled at the granted share: drop 'algorithm' or set token_bucket",
      "rules.yaml:12:7: descriptors[2].rate_limit.lease: 'lease' cannot go with 'capacity': a capacity limit is decided in process from the granted share, not in the store",
      "rules.yaml:13:41: descriptors[2].rate_limit.capacity.fallback: 'maybe' is not one of pessimistic, optimistic, safe",
      "rules.yaml:13:55: descriptors[2].rate_limit.capacity.wants: must be 'observed' (the replica's request rate) or a whole number of requests per window, not the string 'lots'",
      'rules.yaml:13:71: descriptors[2].rate_limit.capacity.headroom: must be a percentage from 0% to 1000% (e.g. 20%), not the number 5',
      'rules.yaml:13:85: descriptors[2].rate_limit.capacity.min_wants: must be an integer from 0 to 4294967295, not -1',
      "rules.yaml:13:89: descriptors[2].rate_limit.capacity.resourse: unknown key 'resourse' (did you mean 'resource'?)",
      "rules.yaml:15:35: descriptors[3].rate_limit.capacity: 'capacity' has no meaning when unlimited",
      "rules.yaml:17:64: descriptors[4].rate_limit.capacity: must be a mapping, not the string 'api'",
      'rules.yaml:19:75: descriptors[5].rate_limit.capacity.resource: must be a resource id of 1 to 256 bytes without control characters',
    ]);
  });
});
