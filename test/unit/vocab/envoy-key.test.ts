import { describe, expect, it } from 'vitest';
import { envoyCounterKey } from '../../../src/vocab/keys.js';

describe('envoyCounterKey (REDIS_KEY_FORMAT=envoy)', () => {
  it('builds the key envoyproxy/ratelimit writes (seen with redis-cli KEYS on the reference)', () => {
    // the reference, CACHE_KEY_PREFIX unset: a minute window starting 2026-11-22T23:18:00Z, a second window
    expect(envoyCounterKey('', 'edge', [{ key: 'remote_address', value: '10.0.0.1' }], 1_795_389_480_000)).toBe('edge_remote_address_10.0.0.1_1795389480');
    expect(
      envoyCounterKey(
        '',
        'edge',
        [
          { key: 'api', value: 'v1' },
          { key: 'user', value: 'bob' },
        ],
        1_795_389_517_000,
      ),
    ).toBe('edge_api_v1_user_bob_1795389517');
  });

  it('puts the prefix first and keeps empty values, as the reference does', () => {
    expect(envoyCounterKey('rl_', 'd', [{ key: 'k', value: '' }], 60_000)).toBe('rl_d_k__60');
  });
});
