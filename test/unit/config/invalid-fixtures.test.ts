/**
 * One fixture file per configuration failure (test/fixtures/config/invalid), each with the exact messages it must
 * produce: the file, line, column, field path and wording are part of the interface (operators grep for them,
 * editors jump to them). A fixture without an entry here fails the suite, so none can silently stop being checked.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';

const DIR = fileURLToPath(new URL('../../fixtures/config/invalid/', import.meta.url));
const read = (name: string): { name: string; text: string } => ({ name, text: readFileSync(DIR + name, 'utf8') });

function errorsOf(names: string[], mergeDomains = false): string[] {
  const result = compileConfigFiles(names.map(read), { mergeDomains });
  return result.ok ? [] : result.errors.map(String);
}

const EXPECTED: Record<string, string[]> = {
  'bad-boolean.yaml': [
    "bad-boolean.yaml:4:18: descriptors[0].shadow_mode: must be true or false, not the string 'true'",
  ],
  'bad-unit.yaml': [
    "bad-unit.yaml:5:13: descriptors[0].rate_limit.unit: 'minit' is not one of second, minute, hour, day, week, month, year (did you mean 'minute'?)",
  ],
  'bad-window.yaml': [
    "bad-window.yaml:5:15: descriptors[0].rate_limit.window: '20x' is not a window like 500ms, 30s, 20m, 36h, 2d or 1w",
  ],
  'burst-on-fixed-window.yaml': [
    'burst-on-fixed-window.yaml:7:7: descriptors[0].rate_limit.burst: burst applies only to token_bucket and leaky_bucket, not fixed_window',
  ],
  'burst-zero.yaml': [
    'burst-zero.yaml:8:14: descriptors[0].rate_limit.burst: must be an integer from 1 to 4294967295, not 0',
  ],
  'defaults-unknown-algorithm.yaml': [
    "defaults-unknown-algorithm.yaml:3:14: defaults.algorithm: 'sliding_window' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket (did you mean 'sliding_window_log'?)",
    "defaults-unknown-algorithm.yaml:4:3: defaults.burts: unknown key 'burts' (did you mean 'burst'?)",
  ],
  'descriptors-not-a-list.yaml': [
    'descriptors-not-a-list.yaml:3:3: descriptors: must be a list of mappings, not a mapping',
  ],
  'duplicate-composite-key.yaml': [
    "duplicate-composite-key.yaml:8:5: descriptors[1]: duplicate descriptor composite key 'edge.database_users' (first defined at duplicate-composite-key.yaml:3)",
  ],
  'duplicate-limit-in-list.yaml': [
    'duplicate-limit-in-list.yaml:7:9: descriptors[0].rate_limits[1]: duplicate limit: same algorithm and window as rate_limits[0]',
  ],
  'duplicate-nested-key.yaml': [
    "duplicate-nested-key.yaml:10:9: descriptors[0].descriptors[1]: duplicate descriptor composite key 'edge.message_type_marketing.to_number' (first defined at duplicate-nested-key.yaml:6)",
  ],
  'empty-domain.yaml': [
    'empty-domain.yaml:1:9: domain: config file cannot have empty domain',
  ],
  'empty-file.yaml': [
    'empty-file.yaml:1:1: domain: config file cannot have empty domain',
  ],
  'empty-key.yaml': [
    'empty-key.yaml:3:10: descriptors[0].key: descriptor has empty key',
  ],
  'empty-rate-limits.yaml': [
    'empty-rate-limits.yaml:4:18: descriptors[0].rate_limits: must list at least one limit',
  ],
  'extension-with-unlimited.yaml': [
    "extension-with-unlimited.yaml:6:7: descriptors[0].rate_limit.algorithm: 'algorithm' has no meaning when unlimited",
  ],
  'list-of-non-maps.yaml': [
    "list-of-non-maps.yaml:7:5: descriptors[1]: list items must be mappings, not the string 'remote_address'",
  ],
  'merge-not-a-mapping.yaml': [
    "merge-not-a-mapping.yaml:5:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
    "merge-not-a-mapping.yaml:5:11: descriptors[0].rate_limit.<<: can only merge mappings, not the string 'second'",
  ],
  'metadata-not-a-mapping.yaml': [
    'metadata-not-a-mapping.yaml:4:15: descriptors[0].metadata: must be a mapping, not a list',
  ],
  'misplaced-key.yaml': [
    "misplaced-key.yaml:6:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
  ],
  'missing-domain.yaml': [
    'missing-domain.yaml:1:1: domain: config file cannot have empty domain',
  ],
  'missing-key.yaml': [
    'missing-key.yaml:3:5: descriptors[0].key: descriptor has empty key',
  ],
  'missing-unit.yaml': [
    "missing-unit.yaml:5:7: descriptors[0].rate_limit.unit: missing rate limit unit: set 'unit' (one of second, minute, hour, day, week, month, year) or 'window'",
  ],
  'non-string-key.yaml': [
    'non-string-key.yaml:4:5: descriptors[0]: key is not of type string: 10',
  ],
  'not-a-mapping.yaml': [
    "not-a-mapping.yaml:1:1: a rules file must be a mapping with 'domain' and 'descriptors', not a list",
  ],
  'rate-limit-and-rate-limits.yaml': [
    "rate-limit-and-rate-limits.yaml:7:5: descriptors[0].rate_limits: 'rate_limit' and 'rate_limits' are mutually exclusive",
  ],
  'replaces-empty.yaml': [
    'replaces-empty.yaml:9:17: descriptors[0].rate_limit.replaces[0].name: should not have an empty replaces entry',
  ],
  'replaces-not-maps.yaml': [
    "replaces-not-maps.yaml:7:18: descriptors[0].rate_limit.replaces[0]: list items must be mappings, not the string 'per_ip'",
  ],
  'replaces-self.yaml': [
    'replaces-self.yaml:10:17: descriptors[0].rate_limit.replaces[0].name: replaces should not contain name of same descriptor',
  ],
  'rpu-negative.yaml': [
    'rpu-negative.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not -1',
  ],
  'rpu-not-a-number.yaml': [
    "rpu-not-a-number.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not the string 'lots'",
  ],
  'rpu-quoted.yaml': [
    "rpu-quoted.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not the string '10'",
  ],
  'rpu-too-big.yaml': [
    'rpu-too-big.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not 4294967296',
  ],
  'several-errors.yaml': [
    "several-errors.yaml:5:13: descriptors[0].rate_limit.unit: 'minit' is not one of second, minute, hour, day, week, month, year (did you mean 'minute'?)",
    'several-errors.yaml:6:26: descriptors[0].rate_limit.requests_per_unit: must be an integer from 0 to 4294967295, not -5',
    "several-errors.yaml:8:5: descriptors[1].shadow_mod: unknown key 'shadow_mod' (did you mean 'shadow_mode'?)",
    'several-errors.yaml:10:14: descriptors[1].descriptors[0].key: descriptor has empty key',
    "several-errors.yaml:14:22: descriptors[1].descriptors[0].rate_limit.algorithm: 'gcra' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket",
    "several-errors.yaml:15:5: descriptors[2]: duplicate descriptor composite key 'edge.user' (first defined at several-errors.yaml:7)",
  ],
  'share-threshold-not-wildcard.yaml': [
    "share-threshold-not-wildcard.yaml:5:22: descriptors[0].share_threshold: share_threshold can only be used with wildcard values (containing '*'), but found key 'path_/files'",
  ],
  'unit-with-unlimited.yaml': [
    'unit-with-unlimited.yaml:6:13: descriptors[0].rate_limit.unit: should not specify rate limit unit when unlimited',
  ],
  'unknown-algorithm.yaml': [
    "unknown-algorithm.yaml:7:18: descriptors[0].rate_limit.algorithm: 'token_buckets' is not one of fixed_window, sliding_window_log, sliding_window_counter, token_bucket, leaky_bucket (did you mean 'token_bucket'?)",
  ],
  'unknown-key-descriptor.yaml': [
    "unknown-key-descriptor.yaml:4:5: descriptors[0].rate_limt: unknown key 'rate_limt' (did you mean 'rate_limit'?)",
  ],
  'unknown-key-rate-limit.yaml': [
    "unknown-key-rate-limit.yaml:6:7: descriptors[0].rate_limit.requests_per_uni: unknown key 'requests_per_uni' (did you mean 'requests_per_unit'?)",
  ],
  'unknown-key-top.yaml': [
    "unknown-key-top.yaml:2:1: descriptor: unknown key 'descriptor' (did you mean 'descriptors'?)",
  ],
  'unlimited-in-list.yaml': [
    "unlimited-in-list.yaml:7:9: descriptors[0].rate_limits[1].unlimited: 'unlimited' is not allowed inside rate_limits; write rate_limit: {unlimited: true} instead",
  ],
  'window-and-unit.yaml': [
    "window-and-unit.yaml:6:7: descriptors[0].rate_limit.window: 'window' and 'unit' are mutually exclusive",
  ],
  'window-too-long.yaml': [
    'window-too-long.yaml:5:15: descriptors[0].rate_limit.window: window must be a whole number of ms from 1 to 34359738368 (about 397 days)',
  ],
  'burst-refill-too-long.yaml': [
    'burst-refill-too-long.yaml:8:14: descriptors[0].rate_limit.burst: burst × window / requests_per_unit (the time to refill an empty bucket) must not exceed 2^48 ms',
  ],
  'zero-unit-multiplier.yaml': [
    'zero-unit-multiplier.yaml:7:24: descriptors[0].rate_limit.unit_multiplier: unit_multiplier must be at least 1',
  ],
  'soft-not-below-hard.yaml': [
    'soft-not-below-hard.yaml:7:31: descriptors[0].rate_limit.soft_requests_per_unit: soft_requests_per_unit (20) must be below requests_per_unit (20)',
  ],
  'multiplier-with-window.yaml': [
    "multiplier-with-window.yaml:6:7: descriptors[0].rate_limit.unit_multiplier: 'unit_multiplier' goes with 'unit', not with 'window'",
  ],
  'reference-name-collision.yaml': [
    "reference-name-collision.yaml:5:5: descriptors[1]: duplicate descriptor composite key 'edge.a_b' (first defined at reference-name-collision.yaml:3)",
  ],
  'window-too-short.yaml': [
    "window-too-short.yaml:5:15: descriptors[0].rate_limit.window: '500ms' is shorter than the minimum window of 1s",
  ],
  'yaml-syntax.yaml': [
    'yaml-syntax.yaml:5:1: YAML syntax error: Flow map in block collection must be sufficiently indented and end with a }',
  ],
  'lease-on-sliding-window-log.yaml': [
    "lease-on-sliding-window-log.yaml:8:7: descriptors[0].rate_limit.lease: lease is not available with sliding_window_log: sliding_window_log records the time of every admitted hit, and leased units are counted when claimed, not when used, so it would stop being exact (use sliding_window_counter)",
  ],
  'lease-on-leaky-bucket.yaml': [
    "lease-on-leaky-bucket.yaml:8:7: descriptors[0].rate_limit.lease: lease is not available with leaky_bucket: leaky_bucket spaces requests evenly, and a replica holding leased units would admit them in a burst (use token_bucket)",
  ],
  'lease-bad-size.yaml': [
    "lease-bad-size.yaml:7:21: descriptors[0].rate_limit.lease.size: must be a count from 1 to 4294967295 (e.g. 50) or a percentage of requests_per_unit above 0% and at most 100% (e.g. 5%), not '150%'",
  ],
  'lease-bad-ttl.yaml': [
    "lease-bad-ttl.yaml:7:30: descriptors[0].rate_limit.lease.ttl: must be a duration from 1ms to 1h like 250ms, 1s or 2m, not '2 seconds'",
  ],
  'lease-with-unlimited.yaml': [
    "lease-with-unlimited.yaml:6:7: descriptors[0].rate_limit.lease: 'lease' has no meaning when unlimited",
  ],
  'lease-unknown-key.yaml': [
    "lease-unknown-key.yaml:7:15: descriptors[0].rate_limit.lease.sise: unknown key 'sise' (did you mean 'size'?)",
  ],
  'lease-not-a-mapping.yaml': [
    "lease-not-a-mapping.yaml:7:14: descriptors[0].rate_limit.lease: must be a mapping, not the string '5%'",
  ],
};

describe('invalid rules fixtures', () => {
  it.each(Object.entries(EXPECTED))('%s', (name, messages) => {
    expect(errorsOf([name])).toEqual(messages);
  });

  it('has an expectation for every single-file fixture', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && !f.startsWith('dup-domain-'));
    expect(files.sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it('rejects the same domain in two files, naming both', () => {
    expect(errorsOf(['dup-domain-a.yaml', 'dup-domain-b.yaml'])).toEqual([
      "dup-domain-b.yaml:2:9: domain: duplicate domain 'shared' in config file (also in dup-domain-a.yaml; set MERGE_DOMAIN_CONFIG=true to merge them)",
    ]);
  });

  it('merges the same domain in two files when asked to', () => {
    const result = compileConfigFiles(['dup-domain-a.yaml', 'dup-domain-b.yaml'].map(read), { mergeDomains: true });
    expect(result.ok).toBe(true);
  });

  it('reports the errors of every file, in file order, in one pass', () => {
    const messages = errorsOf(['bad-unit.yaml', 'several-errors.yaml', 'yaml-syntax.yaml']);
    expect(messages.map((m) => m.split(':')[0])).toEqual([
      'bad-unit.yaml',
      ...Array<string>(6).fill('several-errors.yaml'),
      'yaml-syntax.yaml',
    ]);
  });

  it('exposes the parts of each error', () => {
    const result = compileConfigFiles([read('bad-unit.yaml')], { mergeDomains: false });
    if (result.ok) throw new Error('expected errors');
    const [error] = result.errors;
    expect(error).toMatchObject({
      file: 'bad-unit.yaml',
      line: 5,
      column: 13,
      path: 'descriptors[0].rate_limit.unit',
      name: 'ConfigError',
    });
    expect(error).toBeInstanceOf(Error);
    expect(error!.message).toBe(String(error));
  });
});
