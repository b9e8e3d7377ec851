/** The xDS settings read as envoyproxy/ratelimit reads them (Go durations, its map forms), and the reconnect backoff. */
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/settings/settings.js';
import { parseGoDuration, parseHeaderMap, parseNodeMetadata } from '../../../src/settings/xds-settings.js';
import { Backoff } from '../../../src/xds/backoff.js';

describe('xDS settings', () => {
  it("reads the reference's names, with our defaults where they differ", () => {
    const { settings } = loadSettings({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_SERVER_URL: 'envoy-gateway:18001',
      CONFIG_GRPC_XDS_NODE_ID: 'envoy-ratelimit',
      XDS_CLIENT_BACKOFF_MAX_INTERVAL: '1m30s',
      XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: '',
    });
    expect(settings).toMatchObject({
      configType: 'GRPC_XDS_SOTW',
      xdsServerUrl: 'envoy-gateway:18001',
      xdsNodeId: 'envoy-ratelimit',
      xdsBackoffInitialInterval: 500,
      xdsBackoffMaxInterval: 90_000,
      xdsBackoffRandomFactor: 0.5,
      xdsBackoffJitter: true,
      xdsMaxMsgSizeInBytes: 0,
      xdsServerConnectRetryInterval: 3000,
      forceStartWithoutInitialConfig: false,
    });
    expect(loadSettings({}).settings.configType).toBe('FILE');
  });

  it('refuses what the reference would refuse, naming the setting', () => {
    expect(() => loadSettings({ CONFIG_TYPE: 'GRPC_XDS_DELTA' })).toThrow(/CONFIG_TYPE: 'GRPC_XDS_DELTA' is not one of FILE, GRPC_XDS_SOTW/);
    expect(() => loadSettings({ XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '10' })).toThrow(/XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '10' is not a duration/);
    expect(() => loadSettings({ CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'novalue' })).toThrow(
      /CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'novalue' is not key:value/,
    );
  });

  it('parses Go durations and the two map forms', () => {
    expect([parseGoDuration('10s'), parseGoDuration('500ms'), parseGoDuration('1m30s'), parseGoDuration('1.5s'), parseGoDuration('0')]).toEqual([
      10_000, 500, 90_000, 1500, 0,
    ]);
    expect([...parseNodeMetadata('a=b,c,d=e=f')]).toEqual([
      ['a', 'b'],
      ['d', 'e=f'],
    ]);
    expect([...parseHeaderMap('X-Tenant:t1, auth:Bearer x:y')]).toEqual([
      ['x-tenant', 't1'],
      ['auth', 'Bearer x:y'],
    ]);
  });
});

describe('reconnect backoff', () => {
  it('starts at the initial wait, doubles up to the maximum, and spreads by the random factor', () => {
    const plain = new Backoff({ initialMs: 500, maxMs: 3000, randomFactor: 0.5, jitter: false });
    expect([1, 2, 3, 4, 5].map(() => plain.next())).toEqual([500, 1000, 2000, 3000, 3000]);
    plain.reset();
    expect(plain.next()).toBe(500);
    const low = new Backoff({ initialMs: 1000, maxMs: 60_000, randomFactor: 0.5, jitter: true }, () => 0);
    const high = new Backoff({ initialMs: 1000, maxMs: 60_000, randomFactor: 0.5, jitter: true }, () => 0.999_999);
    expect([low.next(), low.next()]).toEqual([500, 1000]);
    expect([high.next(), high.next()]).toEqual([1500, 3000]);
    const capped = new Backoff({ initialMs: 60_000, maxMs: 60_000, randomFactor: 0.5, jitter: true }, () => 0.999_999);
    expect(capped.next()).toBe(60_000);
  });
});
