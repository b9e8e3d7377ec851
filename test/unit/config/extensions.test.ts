/** Our extensions inside rate_limit: algorithm, burst, window, rate_limits lists and the defaults block. */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../../src/config/index.js';
import { compile, domainOf, entries, fixtureText, lookup } from './support.js';

const ext = domainOf(compile({ 'extensions.yaml': fixtureText('valid/extensions.yaml') }), 'ext');

describe('extensions', () => {
  it.each([
    [['remote_address=1.2.3.4'], 'ext.remote_address → 60/minute sliding_window_counter'],
    [['api_key=k'], 'ext.api_key → 10/second token_bucket burst 10'],
    [['upload=u'], 'ext.upload → 5/second token_bucket burst 20'],
    [['smooth=s'], 'ext.smooth → 5/second leaky_bucket burst 1'],
    [['report=r'], 'ext.report → 3/1200000ms'],
    [['fortnight=f'], 'ext.fortnight → 3/1209600000ms sliding_window_counter'],
    [['tenant=t'], 'ext.tenant → 20/second token_bucket burst 40 (tenant_burst) + 100000/day (tenant_daily) + 10000/hour sliding_window_counter'],
  ])('%j → %s', (request, expected) => {
    expect(lookup(ext, ...request)).toBe(expected);
  });

  it('reports the largest unit dividing a window, or none', () => {
    expect(ext.lookup(entries('report=r'))?.rule.limits[0]).toMatchObject({ windowMs: 1_200_000, unit: 'minute' });
    expect(ext.lookup(entries('fortnight=f'))?.rule.limits[0]).toMatchObject({ windowMs: 1_209_600_000, unit: 'week' });
    expect(ext.lookup(entries('odd_window=o'))?.rule.limits[0]).toMatchObject({ windowMs: 1500, unit: undefined });
  });

  it('takes replaces from the items of a rate_limits list as the rule’s', () => {
    expect(ext.lookup(entries('tenant=t'))?.rule.replaces).toEqual(['per_ip']);
  });

  it('applies a defaults burst to bucket algorithms only', () => {
    const config = compile({
      'b.yaml': `domain: b
defaults: {algorithm: token_bucket, burst: 7}
descriptors:
  - key: a
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 3, algorithm: fixed_window}
  - key: c
    rate_limit: {unit: second, requests_per_unit: 3, burst: 9}
`,
    });
    const b = domainOf(config, 'b');
    expect(lookup(b, 'a=1')).toBe('b.a → 3/second token_bucket burst 7');
    expect(lookup(b, 'b=1')).toBe('b.b → 3/second');
    expect(lookup(b, 'c=1')).toBe('b.c → 3/second token_bucket burst 9');
  });

  it('keeps defaults per file', () => {
    const config = compile(
      {
        'a.yaml': 'domain: d\ndefaults: {algorithm: leaky_bucket}\ndescriptors:\n  - {key: a, rate_limit: {unit: second, requests_per_unit: 1}}\n',
        'b.yaml': 'domain: d\ndescriptors:\n  - {key: b, rate_limit: {unit: second, requests_per_unit: 1}}\n',
      },
      true,
    );
    expect(lookup(domainOf(config, 'd'), 'a=1')).toBe('d.a → 1/second leaky_bucket burst 1');
    expect(lookup(domainOf(config, 'd'), 'b=1')).toBe('d.b → 1/second');
  });

  it('allows the same window with different algorithms in one list', () => {
    const result = compileConfigFiles(
      [
        {
          name: 'x.yaml',
          text: `domain: x
descriptors:
  - key: k
    rate_limits:
      - {unit: minute, requests_per_unit: 10}
      - {unit: minute, requests_per_unit: 10, algorithm: sliding_window_log}
`,
        },
      ],
      { mergeDomains: false },
    );
    expect(result.ok).toBe(true);
  });
});
