/** config/example.yaml (what `npm start` serves) loads cleanly and answers the descriptors envoy.yaml sends. */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../../src/config/index.js';
import type { CompiledDomain } from '../../../src/config/index.js';
import { entries, lookup } from './support.js';

const CONFIG_DIR = fileURLToPath(new URL('../../../config/', import.meta.url));
let edge: CompiledDomain;

beforeAll(async () => {
  const result = await loadConfigDir(CONFIG_DIR, { mergeDomains: false });
  if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
  edge = result.config.domains.get('edge')!;
});

describe('config/example.yaml', () => {
  it.each([
    [['remote_address=203.0.113.9'], 'edge.remote_address → 20/second sliding_window_counter (per_ip)'],
    [['remote_address=10.0.0.10'], 'edge.remote_address_10.0.0.10 → unlimited'],
    [['remote_address=192.168.1.20'], 'edge.remote_address_192.168.* → 5/second sliding_window_counter [shadow]'],
    [['generic_key=api', 'user=svc-billing'], 'edge.generic_key_api.user_svc-* → 200/second token_bucket burst 200'],
    [['generic_key=api', 'user=alice'], 'edge.generic_key_api.user → 10/second token_bucket burst 30 (user_burst) + 3000/1200000ms (user_20m)'],
    [['generic_key=api'], 'none'],
    [['plan=free', 'user=alice'], 'edge.plan_free.user → 1000/day (free_daily)'],
    [['plan=pro', 'user=alice'], 'edge.plan_pro.user → 100000/day'],
    [['plan=free'], 'none'],
    [['plan=enterprise', 'user=alice'], 'none'],
  ])('%j → %s', (request, expected) => {
    expect(lookup(edge, ...request)).toBe(expected);
  });

  it('lets the pro plan replace the per-address limit', () => {
    expect(edge.lookup(entries('plan=pro', 'user=alice'))?.rule.replaces).toEqual(['per_ip']);
  });

  it('gives every user of a plan their own quota counter (no counter shared by all free users)', () => {
    const alice = edge.lookup(entries('plan=free', 'user=alice'))!;
    const bob = edge.lookup(entries('plan=free', 'user=bob'))!;
    expect(alice.rule).toBe(bob.rule);
    expect(alice.counterEntries).not.toEqual(bob.counterEntries);
  });

  it('reports the 20m window as unit minute', () => {
    expect(edge.lookup(entries('generic_key=api', 'user=alice'))?.rule.limits[1]).toMatchObject({
      windowMs: 1_200_000,
      unit: 'minute',
    });
  });
});
