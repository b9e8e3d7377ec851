/** The compiled config as a whole: YAML reading rules, merging, version, immutability and describe(). */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles, contentVersion } from '../../../src/config/index.js';
import { compile, domainOf, entries, lookup } from './support.js';

describe('YAML reading (as gopkg.in/yaml.v2 reads the same text)', () => {
  const config = compile({
    'y.yaml': `domain: 42
descriptors:
  - key: status
    value: 200
    rate_limit: {unit: second, requests_per_unit: 0x10}
  - key: version
    value: 1.0
    rate_limit: {unit: second, requests_per_unit: 010}
  - key: flag
    value: on
    shadow_mode: on
    rate_limit: {unit: second, requests_per_unit: 1_000}
  - key: "null"
    value: ~
    detailed_metric: Yes
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: quoted
    value: "007"
    rate_limit: &base {unit: second, requests_per_unit: 5}
  - key: aliased
    rate_limit: *base
  - key: none
    rate_limit:
`,
  });
  const d = domainOf(config, '42');

  it('reads a scalar string field as its text, whatever it looks like', () => {
    expect(lookup(d, 'status=200')).toBe('42.status_200 → 16/second');
    expect(lookup(d, 'version=1.0')).toBe('42.version_1.0 → 8/second');
    expect(lookup(d, 'version=1')).toBe('none');
    expect(lookup(d, 'flag=on')).toBe('42.flag_on → 1000/second [shadow]');
    expect(lookup(d, 'quoted=007')).toBe('42.quoted_007 → 5/second');
  });

  it('reads null as the empty string (a key-only descriptor)', () => {
    expect(lookup(d, 'null=anything')).toBe('42.null → 1/second');
    expect(d.lookup(entries('null=x'))?.rule.detailedMetric).toBe(true);
  });

  it('follows aliases', () => {
    expect(lookup(d, 'aliased=a')).toBe('42.aliased → 5/second');
  });

  it('honours merge keys, the mapping’s own keys winning', () => {
    const c = compile({
      'm.yaml': `domain: m
descriptors:
  - key: a
    rate_limit: &std {unit: second, requests_per_unit: 10}
  - key: b
    rate_limit:
      <<: *std
      requests_per_unit: 20
  - key: c
    rate_limit:
      <<: [{unit: hour}, *std]
`,
    });
    const d = domainOf(c, 'm');
    expect(lookup(d, 'b=1')).toBe('m.b → 20/second');
    expect(lookup(d, 'c=1')).toBe('m.c → 10/hour');
  });

  it('treats an empty rate_limit as no limit, as the reference does', () => {
    expect(lookup(d, 'none=a')).toBe('none');
  });

  it('refuses an omitted requests_per_unit (the reference reads 0 and rejects everything silently); an explicit 0 blocks', () => {
    const r = compileConfigFiles([{ name: 'z.yaml', text: 'domain: z\ndescriptors:\n  - {key: k, rate_limit: {unit: hour}}\n' }], { mergeDomains: false });
    expect(r.ok ? [] : r.errors.map(String)).toEqual([
      expect.stringContaining('z.yaml:3:26: descriptors[0].rate_limit.requests_per_unit: requests_per_unit is missing'),
    ]);
    const c = compile({ 'z.yaml': 'domain: z\ndescriptors:\n  - {key: k, rate_limit: {unit: hour, requests_per_unit: 0}}\n' });
    expect(lookup(domainOf(c, 'z'), 'k=v')).toBe('z.k → 0/hour');
  });

  it('accepts units in any case', () => {
    const c = compile({ 'u.yaml': 'domain: u\ndescriptors:\n  - {key: k, rate_limit: {unit: HoUr, requests_per_unit: 1}}\n' });
    expect(lookup(domainOf(c, 'u'), 'k=v')).toBe('u.k → 1/hour');
  });
});

describe('metadata', () => {
  it('passes descriptor metadata through to the rule as frozen JSON', () => {
    const c = compile({
      'md.yaml': `domain: md
descriptors:
  - key: team
    metadata:
      owner: payments
      tier: 2
      paging: yes
      tags: [a, "b"]
      nested: {x: ~}
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: plain
    rate_limit: {unit: second, requests_per_unit: 1}
`,
    });
    const d = domainOf(c, 'md');
    const metadata = d.lookup(entries('team=t'))?.rule.metadata;
    expect(metadata).toEqual({ owner: 'payments', tier: 2, paging: true, tags: ['a', 'b'], nested: { x: null } });
    expect(Object.isFrozen(metadata)).toBe(true);
    expect(d.lookup(entries('plain=p'))?.rule.metadata).toBeUndefined();
  });
});

describe('domains and files', () => {
  const a = 'domain: shared\ndescriptors:\n  - {key: a, rate_limit: {unit: second, requests_per_unit: 1}}\n';
  const b = 'domain: shared\ndescriptors:\n  - {key: b, rate_limit: {unit: second, requests_per_unit: 2}}\n';

  it('merges descriptors of one domain across files when asked to', () => {
    const config = compile({ 'a.yaml': a, 'b.yaml': b }, true);
    const d = domainOf(config, 'shared');
    expect(d.files).toEqual(['a.yaml', 'b.yaml']);
    expect(lookup(d, 'a=1')).toBe('shared.a → 1/second');
    expect(lookup(d, 'b=1')).toBe('shared.b → 2/second');
  });

  it('still rejects a duplicate composite key across merged files', () => {
    const result = compileConfigFiles(
      [
        { name: 'a.yaml', text: a },
        { name: 'c.yaml', text: a },
      ],
      { mergeDomains: true },
    );
    expect(result.ok ? [] : result.errors.map(String)).toEqual([
      "c.yaml:3:5: descriptors[0]: duplicate descriptor composite key 'shared.a' (first defined at a.yaml:3)",
    ]);
  });

  it('accepts no files at all: a valid config with no domains', () => {
    const result = compileConfigFiles([], { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.domains.size).toBe(0);
  });

  it('accepts a domain with no descriptors', () => {
    expect(domainOf(compile({ 'e.yaml': 'domain: empty\n' }), 'empty').lookup(entries('a=b'))).toBeUndefined();
  });
});

describe('version', () => {
  const files = { 'a.yaml': 'domain: a\n', 'b.yaml': 'domain: b\n' };

  it('is a sha256 that depends on names and contents only', () => {
    const v = compile(files).version;
    expect(v).toMatch(/^[0-9a-f]{64}$/);
    expect(compile(files).version).toBe(v);
    expect(compile({ 'a.yaml': 'domain: a\n', 'b.yaml': 'domain: b \n' }).version).not.toBe(v);
    expect(compile({ 'a.yaml': 'domain: a\n', 'c.yaml': 'domain: b\n' }).version).not.toBe(v);
  });

  it('cannot be fooled by moving text between a name and a content', () => {
    expect(contentVersion([{ name: 'ab.yaml', text: 'domain: x\n' }])).not.toBe(contentVersion([{ name: 'a', text: 'b.yamldomain: x\n' }]));
    expect(
      contentVersion([
        { name: 'a.yaml', text: '' },
        { name: 'b.yaml', text: 'x' },
      ]),
    ).not.toBe(contentVersion([{ name: 'a.yaml', text: 'b.yamlx' }]));
  });
});

describe('immutability', () => {
  const config = compile({
    'f.yaml': 'domain: f\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n',
  });

  it('freezes the config, its rules, limits and lookups', () => {
    const m = domainOf(config, 'f').lookup(entries('k=v'))!;
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.files)).toBe(true);
    expect(Object.isFrozen(m)).toBe(true);
    expect(Object.isFrozen(m.rule)).toBe(true);
    expect(Object.isFrozen(m.rule.limits)).toBe(true);
    expect(Object.isFrozen(m.rule.limits[0])).toBe(true);
    expect(Object.isFrozen(domainOf(config, 'f'))).toBe(true);
  });

  it('returns the same rule object for every request that lands on it', () => {
    const d = domainOf(config, 'f');
    expect(d.lookup(entries('k=1'))!.rule).toBe(d.lookup(entries('k=2'))!.rule);
  });
});

describe('describe()', () => {
  const config = compile({
    'd.yaml': `domain: d
descriptors:
  - key: tenant
    descriptors:
      - key: plan
        value: pro
        quota_mode: true
        rate_limits:
          - {unit: second, requests_per_unit: 20, algorithm: token_bucket, burst: 40, name: burst}
          - {window: 1500ms, requests_per_unit: 3, replaces: [{name: per_ip}]}
  - key: internal
    rate_limit: {unlimited: true}
`,
  });

  it('lists every rule with its source, limits and flags', () => {
    expect(config.describe()).toEqual([
      {
        name: 'd',
        files: ['d.yaml'],
        rules: [
          {
            stats_key: 'd.tenant.plan_pro',
            source: 'd.yaml:5',
            descriptor: [{ key: 'tenant' }, { key: 'plan', value: 'pro' }],
            unlimited: false,
            limits: [
              {
                name: 'burst',
                requests_per_unit: 20,
                unit: 'second',
                window: '1s',
                window_ms: 1000,
                algorithm: 'token_bucket',
                burst: 40,
              },
              {
                requests_per_unit: 3,
                unit: null,
                window: '1500ms',
                window_ms: 1500,
                algorithm: 'fixed_window',
              },
            ],
            replaces: ['per_ip'],
            shadow_mode: false,
            quota_mode: true,
            detailed_metric: false,
            value_to_metric: false,
            share_threshold: false,
          },
          {
            stats_key: 'd.internal',
            source: 'd.yaml:11',
            descriptor: [{ key: 'internal' }],
            unlimited: true,
            limits: [],
            replaces: [],
            shadow_mode: false,
            quota_mode: false,
            detailed_metric: false,
            value_to_metric: false,
            share_threshold: false,
          },
        ],
      },
    ]);
  });

  it('is JSON-serialisable and frozen', () => {
    const description = config.describe();
    expect(JSON.parse(JSON.stringify(description))).toEqual(description);
    expect(Object.isFrozen(description)).toBe(true);
  });
});
