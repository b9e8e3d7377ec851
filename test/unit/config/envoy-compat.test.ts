/**
 * Configs written for envoyproxy/ratelimit (test/fixtures/config/envoy, in its format, one domain per file)
 * load unchanged through the directory loader and answer lookups as the reference's GetLimit does.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../../src/config/index.js';
import type { CompiledConfig } from '../../../src/config/index.js';
import { FIXTURES, domainOf, entries, lookup } from './support.js';

let config: CompiledConfig;

beforeAll(async () => {
  const result = await loadConfigDir(FIXTURES + 'envoy', { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
  config = result.config;
});

describe('envoyproxy/ratelimit configs', () => {
  it('loads every file, sorted by name, one domain each', () => {
    expect(config.files).toEqual(['edge_proxy.yaml', 'messaging.yaml', 'mongo_cps.yaml', 'nested.yaml', 'replaces.yaml', 'wildcard.yaml', 'windows.yaml']);
    expect([...config.domains.keys()].sort()).toEqual(['api', 'edge_proxy_per_ip', 'messaging', 'mongo_cps', 'rl', 'wildcard', 'windows']);
  });

  it('reads unit_multiplier as a window of several units, reported with the configured unit', () => {
    const [five, one, soft] = ['key1', 'key2', 'key3'].map((k) => domainOf(config, 'windows').lookup(entries(`${k}=x`))!.rule.limits[0]!);
    expect(five).toMatchObject({ requestsPerUnit: 20, unit: 'minute', windowMs: 300_000 });
    expect(one).toMatchObject({ requestsPerUnit: 25, unit: 'minute', windowMs: 60_000, softRequestsPerUnit: 0 });
    expect(soft).toMatchObject({ requestsPerUnit: 20, unit: 'hour', softRequestsPerUnit: 14 });
  });

  it.each([
    [['database=users'], 'mongo_cps.database_users → 500/second'],
    [['database=default'], 'mongo_cps.database_default → 500/second'],
    [['database=orders'], 'none'],
    [['database=users', 'collection=x'], 'none'],
  ])('mongo_cps %j', (request, expected) => {
    expect(lookup(domainOf(config, 'mongo_cps'), ...request)).toBe(expected);
  });

  it.each([
    [['message_type=marketing', 'to_number=2061234567'], 'messaging.message_type_marketing.to_number → 5/day'],
    [['to_number=2061234567'], 'messaging.to_number → 100/day'],
    // A placeholder node (no rate_limit) applies nothing, and an unknown value does not fall back to to_number.
    [['message_type=marketing'], 'none'],
    [['message_type=transactional', 'to_number=2061234567'], 'none'],
  ])('messaging %j', (request, expected) => {
    expect(lookup(domainOf(config, 'messaging'), ...request)).toBe(expected);
  });

  it.each([
    [['remote_address=192.0.2.7'], 'edge_proxy_per_ip.remote_address → 10/second'],
    [['remote_address=50.0.0.5'], 'edge_proxy_per_ip.remote_address_50.0.0.5 → 100/second'],
    [['remote_address=10.0.0.1'], 'edge_proxy_per_ip.remote_address_10.0.0.1 → unlimited'],
  ])('edge_proxy_per_ip %j', (request, expected) => {
    expect(lookup(domainOf(config, 'edge_proxy_per_ip'), ...request)).toBe(expected);
  });

  it.each([
    [['foo=bar'], 'wildcard.foo_bar → 10/minute'],
    [['foo=bar2'], 'wildcard.foo_bar* → 20/minute'],
    [['foo=barbar'], 'wildcard.foo_bar* → 20/minute'],
    [['foo=baz'], 'wildcard.foo_* → 30/minute'],
    [['foo='], 'wildcard.foo_* → 30/minute'],
    [['fo=bar'], 'none'],
  ])('wildcard %j', (request, expected) => {
    expect(lookup(domainOf(config, 'wildcard'), ...request)).toBe(expected);
  });

  it.each([
    [['category=account'], 'rl.category_account → 1/minute'],
    [['source_cluster=proxy', 'destination_cluster=bar'], 'rl.source_cluster_proxy.destination_cluster_bar → 1000/minute'],
    [['source_cluster=proxy', 'destination_cluster=mock'], 'rl.source_cluster_proxy.destination_cluster_mock → 1/minute'],
    [['source_cluster=proxy', 'destination_cluster=other'], 'none'],
    [['source_cluster=proxy'], 'none'],
    [['foo=foo'], 'rl.foo → 2/minute'],
    [['foo=foo', 'bar=banned'], 'rl.foo.bar_banned → 0/minute'],
    [['foo=foo', 'bar=bar'], 'rl.foo.bar → 3/minute'],
    [['foo=foo', 'baz=shady'], 'rl.foo.baz_shady → 3/minute [shadow]'],
    [['foo=foo', 'baz=not-so-shady'], 'rl.foo.baz → 1/second'],
    // Deeper than the config: the leaf has no children, so the walk stops before the last entry.
    [['foo=foo', 'bar=banned', 'extra=1'], 'none'],
    [['foo=foo', 'qux=1'], 'none'],
    [['bar=banned'], 'none'],
  ])('rl %j', (request, expected) => {
    expect(lookup(domainOf(config, 'rl'), ...request)).toBe(expected);
  });

  it('carries name and replaces', () => {
    const api = domainOf(config, 'api');
    expect(api.lookup(entries('user=alice'))?.rule.limits[0]?.name).toBe('per_user');
    const search = api.lookup(entries('path=/search', 'user=alice'));
    expect(search?.rule.replaces).toEqual(['per_user']);
    expect(search?.rule.statsKey).toBe('api.path_/search.user');
  });

  it('builds detailed_metric stats keys from the request values', () => {
    const api = domainOf(config, 'api');
    expect(api.lookup(entries('client=batch'))?.statsKey).toBe('api.client_batch');
    expect(api.lookup(entries('client=acme'))?.statsKey).toBe('api.client_acme');
    expect(api.lookup(entries('client=acme'))?.rule.statsKey).toBe('api.client');
  });

  it('answers nothing for an unknown domain', () => {
    expect(config.domains.get('nope')).toBeUndefined();
  });
});

describe('keys envoyproxy/ratelimit accepts where they have no effect', () => {
  it('loads the file as the reference does, with one warning per ignored key', async () => {
    const result = await loadConfigDir(FIXTURES + 'warnings', { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
    expect(result.warnings.map(String)).toEqual([
      "ignored-keys.yaml:4:1: name: 'name' has no effect here and is ignored, as envoyproxy/ratelimit ignores it ('name' belongs in rate_limit)",
      "ignored-keys.yaml:7:5: descriptors[0].unit: 'unit' has no effect here and is ignored, as envoyproxy/ratelimit ignores it ('unit' belongs in rate_limit)",
      "ignored-keys.yaml:11:7: descriptors[0].rate_limit.shadow_mode: 'shadow_mode' has no effect here and is ignored, as envoyproxy/ratelimit ignores it ('shadow_mode' belongs in a descriptor)",
      "ignored-keys.yaml:15:13: descriptors[1].rate_limit.unit: 'never' is not a unit; ignored, as envoyproxy/ratelimit ignores it, because the limit is unlimited",
      "ignored-keys.yaml:20:7: descriptors[2].rate_limit.requests_per_unit: duplicate key 'requests_per_unit' (also on line 19): the last one is used, as envoyproxy/ratelimit uses it",
    ]);
    expect(domainOf(result.config, 'ignored').lookup(entries('twice=x'))!.rule.limits[0]!.requestsPerUnit).toBe(7);
    const rule = domainOf(result.config, 'ignored').lookup(entries('remote_address=1.2.3.4'))!.rule;
    expect(rule.shadowMode).toBe(false);
    expect(rule.limits[0]).toMatchObject({ requestsPerUnit: 10, unit: 'minute' });
  });
});
