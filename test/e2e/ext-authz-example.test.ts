/**
 * The shipped example (config/ with envoy-ext-authz.yaml's domain "web") through Check, as the README and
 * docs/ext-authz-examples.md describe it: the deny-listed network, sign-ins per address, scrapers by User-Agent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { startService, type RunningService } from '../../src/app/start-service.js';
import { FakeClock } from '../../src/vocab/clock.js';
import { AuthzTestClient, type HttpRequestSpec } from '../support/authz-client.js';
import { testSettings } from '../support/service.js';

describe('config/web.yaml through ext_authz Check', () => {
  let service: RunningService;
  let client: AuthzTestClient;
  const ok = async (spec: HttpRequestSpec) => (await client.check({ ...spec, contextExtensions: { ratelimit_domain: 'web' } })).status?.code === 0;

  beforeAll(async () => {
    service = await startService(testSettings({ configDir: join(import.meta.dirname, '../../config') }), {
      clock: new FakeClock(1_700_000_000_000),
      log: createLogger({ level: 'error', format: 'text', write: () => {} }),
      metrics: createMetrics({ defaultMetrics: false }),
    });
    client = new AuthzTestClient(`127.0.0.1:${service.grpcPort}`);
  });
  afterAll(async () => {
    client.close();
    await service.close();
  });

  it('blocks the deny-listed network outright', async () => {
    expect(await ok({ ip: '203.0.113.7' })).toBe(false);
    expect(await ok({ ip: '203.0.114.7' })).toBe(true);
  });

  it('allows ten sign-ins per minute per address', async () => {
    const results = [];
    for (let i = 0; i < 11; i++) results.push(await ok({ ip: '198.51.100.20', method: 'POST', path: `/login?attempt=${i}` }));
    expect(results).toEqual([...Array<boolean>(10).fill(true), false]);
    expect(await ok({ ip: '198.51.100.21', method: 'POST', path: '/login' })).toBe(true);
    expect(await ok({ ip: '198.51.100.20', method: 'GET', path: '/login' })).toBe(true);
  });

  it('counts every spelling of /login against the sign-in limit', async () => {
    const spellings = [
      '/login/',
      '//login',
      '/%6cogin',
      '/a/../login',
      '/%2Flogin',
      '/./login?x=1',
      '/LOGIN/../login;jsessionid=1',
      '/login/.',
      '/\\login',
      '/login',
    ];
    const results = [];
    for (const path of [...spellings, '/login//']) results.push(await ok({ ip: '198.51.100.30', method: 'POST', path }));
    expect(results).toEqual([...Array<boolean>(spellings.length).fill(true), false]);
    expect(await ok({ ip: '198.51.100.30', method: 'POST', path: '/logins' })).toBe(true);
  });

  it('limits scrapers by User-Agent to one request a minute', async () => {
    const ua = { 'user-agent': 'Scrapy/2.11 (+https://scrapy.org)' };
    expect([await ok({ ip: '192.0.2.80', headers: ua }), await ok({ ip: '192.0.2.81', headers: ua })]).toEqual([true, false]);
  });
});
