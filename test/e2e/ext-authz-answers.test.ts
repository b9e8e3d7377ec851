/**
 * ext_authz Check answers end to end: allowed and denied answers byte for byte against protobufjs'
 * canonical encoding of the expected CheckResponse; one rules file limiting through both protocols with
 * shared counters (memory and a real redis-server); FAILURE_MODE with Redis stopped; AUTHZ_DOMAIN; metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, authzType, encodeExpectedResponse, option } from '../support/authz-client.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = {
  'edge.yaml': `domain: edge
authz:
  rate_limits:
    - actions: [{remote_address: {}}]
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3, name: per-ip}
`,
};

const request = (ip: string, extensions: Record<string, string> = { ratelimit_domain: 'edge' }) => {
  const type = authzType('CheckRequest');
  return type
    .encode(
      type.fromObject({
        attributes: {
          source: { address: { socket_address: { address: ip, port_value: 40_000 } } },
          request: { http: { id: '1', method: 'GET', path: '/', host: 'a.example', headers: { ':path': '/', 'user-agent': 'curl/8' }, protocol: 'HTTP/1.1' } },
          context_extensions: extensions,
        },
      }),
    )
    .finish();
};

describe('ext_authz Check answers (memory store)', () => {
  let svc: TestService;
  let authz: AuthzTestClient;
  let rls: RlsTestClient;
  beforeAll(async () => {
    svc = await startTestService(RULES, { authzDomain: 'edge' }); // FakeClock at 1_700_000_000 s: 40 s left in the minute
    authz = new AuthzTestClient(svc.grpcAddress);
    rls = new RlsTestClient(svc.grpcAddress);
  });
  afterAll(async () => {
    authz.close();
    rls.close();
    await svc.close();
  });

  it('allowed and denied answers, byte for byte', async () => {
    const ok = await authz.checkRaw(request('192.0.2.1'));
    expect(
      ok.equals(
        encodeExpectedResponse({
          status: {},
          ok_response: { response_headers_to_add: [option('ratelimit-policy', '"per-ip";q=3;w=60'), option('ratelimit', '"per-ip";r=2;t=40')] },
        }),
      ),
    ).toBe(true);
    await authz.checkRaw(request('192.0.2.1'));
    await authz.checkRaw(request('192.0.2.1'));
    const denied = await authz.checkRaw(request('192.0.2.1'));
    const expected = encodeExpectedResponse({
      status: { code: 8, message: 'over rate limit' },
      denied_response: {
        status: { code: 429 },
        headers: [option('retry-after', '40'), option('ratelimit-policy', '"per-ip";q=3;w=60'), option('ratelimit', '"per-ip";r=0;t=40')],
      },
    });
    expect(denied.toString('hex')).toBe(expected.toString('hex'));
  });

  it('one rules file limits through both protocols with shared counters', async () => {
    const viaRls = () => rls.ask('edge', [[['remote_address', '198.51.100.9']]]).then((r) => r.overall_code === 'OK');
    const viaAuthz = () => authz.check({ ip: '198.51.100.9' }).then((r) => r.status?.code === 0);
    expect([await viaRls(), await viaAuthz(), await viaRls(), await viaAuthz(), await viaRls()]).toEqual([true, true, true, false, false]);
  });

  it('AUTHZ_DOMAIN is the domain when the route sets none; metrics count every answer by result', async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push((await authz.check({ ip: '203.0.113.5' })).status?.code);
    expect(answers).toEqual([0, 0, 0, 8]);
    await authz.check({ ip: '203.0.113.5', contextExtensions: { ratelimit_domain: 'other' } });
    const text = await (await fetch(`${svc.httpBase}/metrics`)).text();
    expect(text).toMatch(/ratelimit_authz_checks_total\{domain="edge",result="over_limit"\} [1-9]/);
    expect(text).toMatch(/ratelimit_authz_checks_total\{domain="unknown",result="unknown_domain"\} 1\b/);
    expect(text).toMatch(/ratelimit_grpc_request_duration_seconds_count\{method="ext_authz.Check"\} [1-9]/);
  });
});

describe('ext_authz Check with Redis: shared counters and FAILURE_MODE', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('shares the counters of ShouldRateLimit in Redis, across two replicas', async () => {
    const settings = { backend: 'redis' as const, redisUrl: redis.url, cacheKeyPrefix: 'authz-shared:' };
    const [a, b] = [await startTestService(RULES, settings), await startTestService(RULES, settings)];
    const [authzA, rlsB] = [new AuthzTestClient(a.grpcAddress), new RlsTestClient(b.grpcAddress)];
    try {
      const viaA = () => authzA.check({ ip: '2001:db8::9', contextExtensions: { ratelimit_domain: 'edge' } }).then((r) => r.status?.code === 0);
      const viaB = () => rlsB.ask('edge', [[['remote_address', '2001:db8::9']]]).then((r) => r.overall_code === 'OK');
      expect([await viaA(), await viaB(), await viaA(), await viaB(), await viaA()]).toEqual([true, true, true, false, false]);
    } finally {
      authzA.close();
      rlsB.close();
      await a.close();
      await b.close();
    }
  });

  it('concurrent mixed traffic, both protocols on two replicas, hostile requests in between: exactly the limit is admitted', async () => {
    const rules = { 'edge.yaml': RULES['edge.yaml'].replace('requests_per_unit: 3', 'requests_per_unit: 50') };
    const settings = { backend: 'redis' as const, redisUrl: redis.url, cacheKeyPrefix: 'authz-mixed:' };
    const [a, b] = [await startTestService(rules, settings), await startTestService(rules, settings)];
    const clients = [new AuthzTestClient(a.grpcAddress), new AuthzTestClient(b.grpcAddress)];
    const rlsClients = [new RlsTestClient(a.grpcAddress), new RlsTestClient(b.grpcAddress)];
    try {
      const calls: Promise<string>[] = [];
      for (let i = 0; i < 160; i++) {
        const k = i % 4;
        if (k === 0)
          calls.push(
            clients[i % 2]!.check({ ip: '192.0.2.99', contextExtensions: { ratelimit_domain: 'edge' } }).then((r) => (r.status?.code === 0 ? 'ok' : 'over')),
          );
        else if (k === 1)
          calls.push(rlsClients[i % 2]!.ask('edge', [[['remote_address', '192.0.2.99']]]).then((r) => (r.overall_code === 'OK' ? 'ok' : 'over')));
        else if (k === 2)
          calls.push(
            clients[i % 2]!.checkRaw(Uint8Array.from([0x0a, 0x05, 0xff])).then(
              () => 'bad-answered',
              () => 'refused',
            ),
          );
        else
          calls.push(
            clients[i % 2]!.check({ ip: '2001:db8::99', rawHeaders: [['x-junk', 'j'.repeat(2000)]], contextExtensions: { ratelimit_domain: 'edge' } }).then(
              (r) => (r.status?.code === 0 ? 'other-ok' : 'other-over'),
            ),
          );
      }
      const results = await Promise.all(calls);
      const count = (x: string) => results.filter((r) => r === x).length;
      expect(count('ok')).toBe(50);
      expect(count('over')).toBe(30);
      expect(count('refused')).toBe(40);
      expect(count('other-ok')).toBe(40); // another client's counter: untouched by the first one's
    } finally {
      for (const c of [...clients, ...rlsClients]) c.close();
      await a.close();
      await b.close();
    }
  });

  it.each(['closed', 'open'] as const)('FAILURE_MODE=%s while Redis is stopped', async (mode) => {
    const svc = await startTestService(RULES, { backend: 'redis', redisUrl: redis.url, failureMode: mode, cacheKeyPrefix: `authz-${mode}:` });
    const client = new AuthzTestClient(svc.grpcAddress);
    try {
      await redis.stopRedis();
      const r = await client.check({ ip: '192.0.2.50', contextExtensions: { ratelimit_domain: 'edge' } });
      if (mode === 'closed') {
        expect(r.status?.code).toBe(14);
        expect(r.denied_response?.status?.code).toBe('ServiceUnavailable');
        expect(r.denied_response?.body).toContain('FAILURE_MODE=closed');
        expect(r.denied_response?.headers.map((h) => [h.header.key, h.header.value])).toEqual([['content-type', 'text/plain; charset=utf-8']]);
      } else {
        expect(r.status?.code).toBe(0);
      }
    } finally {
      await redis.restart();
      client.close();
      await svc.close();
    }
  });
});
