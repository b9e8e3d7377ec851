/** REDIS_PERSECOND_URL in the reference's forms and ours, with its auth, sentinel auth and TLS (app/per-second-redis.ts). */
import { describe, expect, it } from 'vitest';
import { perSecondRedisOptions } from '../../../src/app/per-second-redis.js';
import type { Settings } from '../../../src/settings/settings.js';
import type { RedisStoreOptions } from '../../../src/storage/redis/redis-store.js';
import { testSettings } from '../../support/service.js';

const base: RedisStoreOptions = {
  url: 'redis://main:6379',
  type: 'single',
  sentinels: [{ host: 'main-sentinel', port: 26379 }],
  tls: { caFile: '/ca.pem' },
  connectTimeoutMs: 700,
};
const options = (s: Partial<Settings>) => perSecondRedisOptions(testSettings({ backend: 'redis', redisPerSecond: true, ...s }), base);

describe('per-second Redis options', () => {
  it("reads the reference's host:port, with its password, as a single Redis; timeouts as the main one's", () => {
    const o = options({ redisPerSecondUrl: 'ps:6380', redisPerSecondAuth: 's3cret' });
    expect(o).toMatchObject({ url: 'redis://:s3cret@ps:6380', type: 'single', connectTimeoutMs: 700 });
    expect(o.sentinels).toBeUndefined(); // not the main Redis's sentinels
    expect(o.tls).toBeUndefined(); // TLS files only with TLS on
  });

  it('reads master,host:port,... with REDIS_PERSECOND_TYPE=sentinel, and the sentinels password', () => {
    const o = options({ redisPerSecondUrl: 'psmaster,s1:26379,s2:26380', redisPerSecondType: 'sentinel', redisPerSecondSentinelAuth: 'sp' });
    expect(o).toMatchObject({
      type: 'sentinel',
      sentinelMaster: 'psmaster',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      sentinelPassword: 'sp',
    });
  });

  it('reads host:port,... with REDIS_PERSECOND_TYPE=cluster; TLS turns the URL into rediss:// with the REDIS_TLS_* files', () => {
    const o = options({ redisPerSecondUrl: 'c1:7000,c2:7001', redisPerSecondType: 'cluster', redisPerSecondTls: true, redisPerSecondAuth: 'u:p' });
    expect(o).toMatchObject({ url: 'rediss://u:p@c1:7000', type: 'cluster', tls: { caFile: '/ca.pem' } });
    expect(o.clusterNodes).toEqual([
      { host: 'c1', port: 7000 },
      { host: 'c2', port: 7001 },
    ]);
  });

  it('keeps our redis:// form and the password in it', () => {
    expect(options({ redisPerSecondUrl: 'redis://:inurl@ps:6379/2', redisPerSecondAuth: 'other' }).url).toBe('redis://:inurl@ps:6379/2');
  });

  it('stops the start on a missing or malformed URL, naming the setting', () => {
    expect(() => options({ redisPerSecondUrl: '' })).toThrow('REDIS_PERSECOND=true needs REDIS_PERSECOND_URL');
    expect(() => options({ redisPerSecondUrl: 'a:1,b:2' })).toThrow('REDIS_PERSECOND_URL: a single Redis is one host:port');
    expect(() => options({ redisPerSecondUrl: 'onlymaster', redisPerSecondType: 'sentinel' })).toThrow(
      'REDIS_PERSECOND_URL: with REDIS_PERSECOND_TYPE=sentinel',
    );
    expect(() => options({ redisPerSecondUrl: 'ps:notaport' })).toThrow(/REDIS_PERSECOND_URL: .*host:port/);
  });
});
