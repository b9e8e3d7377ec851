/**
 * Stats keys and counter identity, as the reference builds them (src/config/config_impl.go GetLimit after
 * value_to_metric and share_threshold): the stats key is the config path unless value_to_metric or
 * detailed_metric asks for request values; share_threshold replaces the value of the entries its wildcard
 * matched with the pattern, in the counter identity and in the stats keys alike.
 */
import { describe, expect, it } from 'vitest';
import { compile, domainOf, entries, fixtureText } from './support.js';

const domain = domainOf(compile({ 'stats.yaml': fixtureText('valid/stats.yaml') }), 'stats');

function match(...pairs: string[]): { stats: string; counter: string } {
  const m = domain.lookup(entries(...pairs));
  if (m === undefined) throw new Error(`no match for ${pairs.join(',')}`);
  return { stats: m.statsKey, counter: m.counterEntries.map((e) => `${e.key}=${e.value}`).join(',') };
}

describe('share_threshold', () => {
  it('gives every value matching the wildcard one counter', () => {
    expect(match('files=files/a.pdf')).toEqual({ stats: 'stats.files_files/*', counter: 'files=files/*' });
    expect(match('files=files/b.csv')).toEqual({ stats: 'stats.files_files/*', counter: 'files=files/*' });
  });

  it('shares the pattern when the limit is deeper than the wildcard', () => {
    expect(match('model=gpt-4', 'user=u1')).toEqual({ stats: 'stats.model_gpt-*.user', counter: 'model=gpt-*,user=u1' });
    expect(match('model=gpt-5', 'user=u1').counter).toBe('model=gpt-*,user=u1');
  });

  it('is recorded on the rule', () => {
    expect(domain.lookup(entries('files=files/x'))?.rule.shareThreshold).toBe(true);
    expect(domain.lookup(entries('plain=p-1'))?.rule.shareThreshold).toBe(false);
  });

  it('leaves other wildcards with one counter per value', () => {
    expect(match('plain=p-1')).toEqual({ stats: 'stats.plain_p-*', counter: 'plain=p-1' });
  });
});

describe('value_to_metric', () => {
  it('puts the request value of a wildcard node in the stats key', () => {
    expect(match('model=claude-3')).toEqual({ stats: 'stats.model_claude-3', counter: 'model=claude-3' });
  });

  it('puts the request value of a key-only node in the stats key', () => {
    expect(match('route=/checkout').stats).toBe('stats.route_/checkout');
    expect(match('route=').stats).toBe('stats.route');
  });

  it('applies per level', () => {
    expect(match('region=eu-west', 'user=u1').stats).toBe('stats.region_eu-*.user_u1');
  });
});

describe('detailed_metric', () => {
  it('builds the stats key from the request, keeping shared patterns', () => {
    expect(match('tier=t-gold')).toEqual({ stats: 'stats.tier_t-*', counter: 'tier=t-*' });
  });

  it('writes key_value for every entry, even an empty value', () => {
    expect(match('dm=x').stats).toBe('stats.dm_x');
    expect(match('dm=').stats).toBe('stats.dm_');
  });

  it('keeps the config path on the rule itself', () => {
    expect(domain.lookup(entries('dm=x'))?.rule.statsKey).toBe('stats.dm');
    expect(domain.lookup(entries('dm=x'))?.rule.detailedMetric).toBe(true);
  });
});

describe('modes', () => {
  it('records shadow_mode (YAML 1.1 "yes" is true, as in the reference)', () => {
    expect(domain.lookup(entries('canary=a'))?.rule).toMatchObject({ shadowMode: true, quotaMode: false });
  });

  it('records quota_mode', () => {
    expect(domain.lookup(entries('budget=a'))?.rule).toMatchObject({ shadowMode: false, quotaMode: true });
  });
});
