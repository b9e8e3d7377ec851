/**
 * Connection options → ioredis options (pure), the reconnect back-off, and the throttled log.
 */
import type { RedisOptions } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/vocab/clock.js';
import { backoff, parseHostPorts, parseRedisUrl, planClient } from '../../../src/storage/redis/options.js';
import { throttledLog } from '../../../src/storage/throttled-log.js';

describe('parseRedisUrl', () => {
  it('reads host, port, ACL user, password (percent-decoded), db and TLS', () => {
    expect(parseRedisUrl('redis://svc:p%40ss@redis.internal:6380/3')).toEqual({
      host: 'redis.internal',
      port: 6380,
      username: 'svc',
      password: 'p@ss',
      db: 3,
      tls: false,
    });
    expect(parseRedisUrl('rediss://:secret@h')).toEqual({ host: 'h', port: 6379, password: 'secret', db: 0, tls: true });
    expect(parseRedisUrl('redis://[::1]:7000')).toMatchObject({ host: '::1', port: 7000 });
  });

  it('rejects what is not a Redis URL', () => {
    expect(() => parseRedisUrl('127.0.0.1:6379')).toThrow(/redis:\/\//);
    expect(() => parseRedisUrl('http://h:1')).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(() => parseRedisUrl('redis://h/x')).toThrow(/database number/);
  });
});

describe('parseHostPorts', () => {
  it('parses lists with default ports and IPv6', () => {
    expect(parseHostPorts(' a:1, b ,[::1]:26380', 26379)).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 26379 },
      { host: '::1', port: 26380 },
    ]);
    expect(parseHostPorts('')).toEqual([]);
    expect(() => parseHostPorts('a:99999')).toThrow(/host:port/);
  });
});

/** The ioredis options of a standalone or Sentinel plan. */
function standalone(plan: ReturnType<typeof planClient>): RedisOptions {
  if (plan.type === 'cluster') throw new Error('expected a standalone or Sentinel plan');
  return plan.options;
}

describe('planClient', () => {
  it('single: fails fast while down, never resends, pipelines, reconnects with a capped back-off', () => {
    const plan = planClient({ url: 'redis://u:p@h:1/2', connectTimeoutMs: 300, commandTimeoutMs: 40, reconnectMaxDelayMs: 500 });
    expect(plan.type).toBe('single');
    expect(plan.options).toMatchObject({
      host: 'h',
      port: 1,
      db: 2,
      username: 'u',
      password: 'p',
      connectTimeout: 300,
      commandTimeout: 40,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      enableAutoPipelining: true,
    });
    expect(standalone(plan).tls).toBeUndefined();
    const retry = (plan.options as { retryStrategy: (n: number) => number }).retryStrategy;
    expect([1, 2, 3, 4, 5, 50].map(retry)).toEqual([50, 100, 200, 400, 500, 500]);
  });

  it('sentinel: master name and sentinels (default: the URL host), sentinel password, TLS for sentinels too', () => {
    const plan = planClient({
      url: 'rediss://:m@ignored:6379/1',
      type: 'sentinel',
      sentinelMaster: 'mymaster',
      sentinels: [{ host: 's1', port: 26379 }],
      sentinelPassword: 'sp',
      tls: { servername: 'redis.internal' },
    });
    expect(plan.options).toMatchObject({
      name: 'mymaster',
      sentinels: [{ host: 's1', port: 26379 }],
      sentinelPassword: 'sp',
      password: 'm',
      db: 1,
      tls: { servername: 'redis.internal' },
      enableTLSForSentinelMode: true,
      sentinelTLS: { servername: 'redis.internal' },
    });
    expect(planClient({ url: 'redis://s0:26000', type: 'sentinel', sentinelMaster: 'x' }).options).toMatchObject({
      sentinels: [{ host: 's0', port: 26000 }],
    });
    expect(() => planClient({ url: 'redis://h', type: 'sentinel' })).toThrow(/master name/);
  });

  it('cluster: seed nodes (default: the URL), credentials for every node, db 0 only', () => {
    const plan = planClient({ url: 'redis://u:p@seed:7000', type: 'cluster', clusterNodes: [{ host: 'n1', port: 7001 }] });
    if (plan.type !== 'cluster') throw new Error('expected a cluster plan');
    expect(plan.nodes).toEqual([{ host: 'n1', port: 7001 }]);
    expect(plan.options).toMatchObject({
      enableOfflineQueue: false,
      enableAutoPipelining: true,
      redisOptions: { username: 'u', password: 'p', maxRetriesPerRequest: 0 },
    });
    const seeded = planClient({ url: 'redis://seed:7000', type: 'cluster' });
    expect(seeded.type === 'cluster' && seeded.nodes).toEqual([{ host: 'seed', port: 7000 }]);
    expect(() => planClient({ url: 'redis://h/1', type: 'cluster' })).toThrow(/database 0/);
  });

  it('TLS: files are read, verification can be turned off, and TLS options need rediss://', () => {
    const plan = planClient({ url: 'rediss://h', tls: { caFile: import.meta.filename, insecureSkipVerify: true } });
    const tls = standalone(plan).tls as { ca: Buffer; rejectUnauthorized: boolean };
    expect(tls.ca.toString()).toContain('TLS: files are read');
    expect(tls.rejectUnauthorized).toBe(false);
    expect(() => planClient({ url: 'redis://h', tls: { caFile: '/x' } })).toThrow(/not rediss/);
    expect(() => planClient({ url: 'rediss://h', tls: { caFile: '/nonexistent/ca.pem' } })).toThrow(/ENOENT/);
  });

  it('by default reconnects within 10 ms of Redis coming back, however long it was down', () => {
    // every answer while disconnected is FAILURE_MODE's (fail open by default): the wait after Redis is back is
    // time without limits, which envoyproxy/ratelimit (it dials on demand) does not have
    const retry = standalone(planClient({ url: 'redis://h' })).retryStrategy!;
    for (let n = 1; n < 1000; n++) expect(retry(n)).toBeLessThanOrEqual(10);
  });

  it('back-off never gives up and never exceeds its cap', () => {
    const retry = backoff(2000);
    for (let n = 1; n < 1000; n += 7) expect(retry(n)).toBeLessThanOrEqual(2000);
    expect(retry(1000)).toBe(2000);
  });
});

describe('throttledLog', () => {
  it('writes a message at most once per interval and then says how many were suppressed', () => {
    const clock = new FakeClock(0);
    const lines: string[] = [];
    const log = throttledLog({ log: (m) => lines.push(m), clock, intervalMs: 1000 });
    log('down');
    log('down');
    log('other');
    clock.advance(999);
    log('down');
    clock.advance(1);
    log('down');
    expect(lines).toEqual(['down', 'other', 'down (2 more since the last report)']);
  });
});
