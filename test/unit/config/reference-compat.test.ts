/**
 * Three kinds of files envoyproxy/ratelimit accepts (found by a differential run against it) and that
 * load here the same way, with a warning where the reference silently ignores something. The behaviour below
 * was checked against the reference binary (/work/shared/tools/envoy-ratelimit, /rlconfig and requests).
 */
import { describe, expect, it } from 'vitest';
import { compileConfigFiles, loadConfigDir } from '../../../src/config/index.js';
import { FIXTURES, domainOf, entries } from './support.js';

async function loadCompat() {
  const result = await loadConfigDir(FIXTURES + 'compat', { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result;
}

describe('files envoyproxy/ratelimit accepts', () => {
  it('loads the three fixtures, with exactly these warnings', async () => {
    const { config, warnings } = await loadCompat();
    expect([...config.domains.keys()].sort()).toEqual(['numeric_meta', 'star_key', 'two_docs']);
    expect(warnings.map(String)).toEqual([
      'two-documents.yaml:7:1: only the first YAML document of a file is read; the 2 documents after it are ignored, as envoyproxy/ratelimit ignores them',
    ]);
  });

  it('reads only the first YAML document (the reference ignores the rest, even invalid YAML)', async () => {
    const { config } = await loadCompat();
    expect(config.domains.has('second_doc')).toBe(false);
    expect(domainOf(config, 'two_docs').lookup(entries('k'))?.rule.statsKey).toBe('two_docs.k');
  });

  it('reads number and boolean metadata keys as the reference does (these as written)', async () => {
    const { config } = await loadCompat();
    expect(domainOf(config, 'numeric_meta').lookup(entries('k'))?.rule.metadata).toEqual({
      '200': 'ok',
      codes: { '404': 'not_found', '1.5': 'half', true: true }, // `yes` is a YAML 1.1 boolean
    });
  });

  it('matches a key ending in * as a prefix of the request key, sharing counters as the reference does', async () => {
    const { config } = await loadCompat();
    const d = domainOf(config, 'star_key');
    const counter = (...pairs: string[]) => {
      const m = d.lookup(entries(...pairs));
      return m === undefined ? 'none' : `${m.rule.statsKey} ${m.counterEntries.map((e) => `${e.key}=${e.value}`).join(',')}`;
    };
    // Reference: user=abc and user=xyz count on one counter, userQ on its own; other has no limit.
    expect(counter('user=abc')).toBe('star_key.user* user=');
    expect(counter('user=xyz')).toBe('star_key.user* user=');
    expect(counter('userQ')).toBe('star_key.user* userQ=');
    expect(counter('other')).toBe('none');
    // Reference: tenantX=gold and tenant=gold match (one counter each); tenantX=silver has no limit.
    expect(counter('tenantX=gold')).toBe('star_key.tenant*_gold tenantX=gold');
    expect(counter('tenant=gold')).toBe('star_key.tenant*_gold tenant=gold');
    expect(counter('tenantX=silver')).toBe('none');
  });

  it('warns that share_threshold is ignored when the * is inside a key, and still rejects it with no * at all', () => {
    const rule = '    rate_limit: {unit: second, requests_per_unit: 1}\n';
    const ok = compileConfigFiles([{ name: 'f.yaml', text: `domain: d\ndescriptors:\n  - key: us*er\n    share_threshold: true\n${rule}` }], {
      mergeDomains: false,
    });
    expect(ok.ok && ok.warnings.map(String)).toEqual([
      "f.yaml:4:22: descriptors[0].share_threshold: share_threshold has no effect on 'us*er' (only a value with '*' or a key ending in '*' is a wildcard) and is ignored, as envoyproxy/ratelimit ignores it",
    ]);
    const bad = compileConfigFiles([{ name: 'f.yaml', text: `domain: d\ndescriptors:\n  - key: user\n    share_threshold: true\n${rule}` }], {
      mergeDomains: false,
    });
    expect(bad.ok ? [] : bad.errors.map(String)).toEqual([
      "f.yaml:4:22: descriptors[0].share_threshold: share_threshold can only be used with wildcard values (containing '*'), but found key 'user'",
    ]);
  });
});
