/**
 * ext_authz features as a client and the upstream see them through a real Envoy: descriptors from the
 * client address (IP, /24, /64), a header, a cookie, the path, the host, a query parameter and a region header;
 * denied answers with the rule's status, body and headers; real 302/303/307 redirects with `location`; the
 * headers of an allowed answer overwriting the upstream's and the client's (docs/ext-authz.md, Answers). On the
 * memory store and on Redis.
 *
 * The config is envoy-ext-authz.yaml with three test changes: the route names domain "feat", the client
 * address comes from one trusted X-Forwarded-For hop (so the test can be any IPv4 or IPv6 client from
 * 127.0.0.1, as behind a load balancer), and a 2 s ext_authz timeout (a loaded CI machine; a late answer would
 * fail open). The sidecar reads that address from x-client-address (AUTHZ_CLIENT_ADDRESS_HEADER): Envoy's
 * ext_authz reports the TCP peer as the source whatever xff_num_trusted_hops says.
 */
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { shippedEnvoyConfig } from '../support/envoy-config.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream, type UpstreamRequest } from '../support/envoy-upstream.js';
import { rawHttp, type RawAnswer } from '../support/http-raw.js';
import { scrapeMetrics } from '../support/scrape.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { startTestService, type TestService } from '../support/service.js';

const ROOT = join(import.meta.dirname, '../..');
const HCM = 'static_resources.listeners[name=ingress].filter_chains[0].filters[0].typed_config';

/** One rule per action: the value below may pass once a minute, then the answer says which rule denied. */
const once = (why: string, extra = '') => `rate_limit: {unit: minute, requests_per_unit: 1, on_limit: {headers: {x-why: ${why}}${extra}}}`;
const RULES = `domain: feat
authz:
  rate_limits:
    - actions: [{remote_address: {}}]
    - actions: [{masked_remote_address: {v4_prefix_mask_len: 24, v6_prefix_mask_len: 64}}]
    - actions: [{request_headers: {header_name: x-api-key, descriptor_key: api_key}}]
    - actions: [{cookie: {name: session}}]
    - actions: [{path: {strip_query: true}}]
    - actions: [{host: {}}]
    - actions: [{query_parameters: {query_parameter_name: page, descriptor_key: page}}]
    - actions: [{region: {headers: [x-edge-region], descriptor_key: edge_region}}]
    - actions: [{region: {headers: [cf-ipcountry]}}]
descriptors:
  - {key: remote_address, value: 198.51.100.1, ${once('ip')}}
  - {key: masked_remote_address, value: 192.0.2.0/24, ${once('v4net')}}
  - {key: masked_remote_address, value: "2001:db8:1:2::/64", ${once('v6net')}}
  - {key: api_key, value: k1, ${once('header')}}
  - {key: session, value: s1, ${once('cookie')}}
  - {key: host, value: shop.example.com, ${once('host')}}
  - {key: page, value: "7", ${once('query')}}
  - {key: edge_region, value: XX, ${once('region')}}
  - {key: region, value: XX, rate_limit: {unit: minute, requests_per_unit: 0}}
  - key: path
    value: /teapot
    rate_limit: {unit: minute, requests_per_unit: 1, on_limit: {status: 418, content_type: application/json, body: '{"busy":"{{descriptor}}","retry":{{retry_after}}}', headers: {x-why: path}}}
  - {key: path, value: /r302, rate_limit: {unit: minute, requests_per_unit: 0, on_limit: {action: redirect, status: 302, location: "https://example.com/busy?d={{descriptor}}"}}}
  - {key: path, value: /r303, rate_limit: {unit: minute, requests_per_unit: 0, on_limit: {action: redirect, status: 303, location: "https://example.com/slow"}}}
  - {key: path, value: /r307, rate_limit: {unit: minute, requests_per_unit: 0, on_limit: {action: redirect, status: 307, location: "/elsewhere"}}}
  - {key: path, value: /soft, rate_limit: {unit: minute, requests_per_unit: 3, soft_requests_per_unit: 1}}
  - {key: path, value: /degrade, rate_limit: {unit: minute, requests_per_unit: 1, on_limit: {action: degrade, request_headers: {x-degraded: "true"}}}}
`;

/** The upstream answers with its own `ratelimit` header, which the sidecar's must replace. */
function upstreamAnswer(_req: UpstreamRequest, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/plain', ratelimit: 'from-upstream' });
  res.end('upstream');
}

for (const backend of ['memory', 'redis'] as const) {
  describeEnvoy(`ext_authz features through a real Envoy, ${backend} store`, () => {
    let redis: RedisServer | undefined;
    let service: TestService;
    let upstream: Upstream;
    let envoy: EnvoyProcess;
    let port: number;
    let client = 0;
    /** A fresh client address for each request unless given, so only the rule under test repeats. */
    const send = (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawAnswer> =>
      rawHttp(port, method, path, { 'x-forwarded-for': `10.9.${Math.floor(++client / 250)}.${client % 250}`, ...headers });
    const twice = async (path: string, headers: Record<string, string>, second: Record<string, string> = headers) => [
      await send(path, headers),
      await send(path, second),
    ];

    beforeAll(async () => {
      redis = backend === 'redis' ? await startRedis() : undefined;
      service = await startTestService(
        { 'feat.yaml': RULES },
        { authzClientAddressHeader: 'x-client-address', ...(redis ? { backend: 'redis', redisUrl: redis.url } : {}) },
      );
      upstream = await startUpstream(upstreamAnswer);
      envoy = await startEnvoy(
        shippedEnvoyConfig(join(ROOT, 'envoy-ext-authz.yaml'), {
          clusters: { ratelimit: { address: '127.0.0.1', port: service.service.grpcPort }, app: { address: '127.0.0.1', port: upstream.port } },
          set: {
            [`${HCM}.xff_num_trusted_hops`]: 1,
            [`${HCM}.route_config.virtual_hosts[0].routes[1].typed_per_filter_config`]: {
              'envoy.filters.http.ext_authz': {
                '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute',
                check_settings: { context_extensions: { ratelimit_domain: 'feat' } },
              },
            },
            [`${HCM}.http_filters[name=envoy.filters.http.ext_authz].typed_config.grpc_service.timeout`]: '2s',
          },
        }),
      );
      port = await envoy.listenerPort('ingress');
    });
    afterAll(async () => {
      await envoy?.stop();
      await upstream?.close();
      await service?.close();
      await redis?.stop();
    });

    const deniedBy = (answers: RawAnswer[]) => answers.map((a) => `${a.status} ${String(a.headers['x-why'] ?? '')}`.trim());

    it.each([
      ['the client IP', { 'x-forwarded-for': '198.51.100.1' }, { 'x-forwarded-for': '198.51.100.1' }, 'ip'],
      ['its /24', { 'x-forwarded-for': '192.0.2.10' }, { 'x-forwarded-for': '192.0.2.200' }, 'v4net'],
      ['its /64', { 'x-forwarded-for': '2001:db8:1:2::5' }, { 'x-forwarded-for': '2001:db8:1:2:ffff::9' }, 'v6net'],
      ['a header', { 'x-api-key': 'k1' }, { 'x-api-key': 'k1' }, 'header'],
      ['a cookie', { cookie: 'a=1; session=s1' }, { cookie: 'session="s1"' }, 'cookie'],
      ['the host (lowercased)', { host: 'shop.example.com' }, { host: 'Shop.Example.COM' }, 'host'],
      ['a region header', { 'x-edge-region': 'xx' }, { 'x-edge-region': 'XX' }, 'region'],
    ])('limits by %s', async (_what, first, second, why) => {
      expect(deniedBy(await twice('/', first, second))).toEqual(['200', `429 ${why}`]);
    });

    it('takes the client address Envoy trusts, never one the client claims in x-client-address', async () => {
      const claimed = { 'x-forwarded-for': '198.51.100.77', 'x-client-address': '198.51.100.1' };
      expect(deniedBy(await twice('/', claimed))).toEqual(['200', '200']);
    });

    it('limits by a query parameter, decoded, and by the path, normalized', async () => {
      expect(deniedBy([await send('/list?page=7'), await send('/other?x=1&page=%37')])).toEqual(['200', '429 query']);
      const teapot = [await send('/teapot?a=1'), await send('//teapot/')];
      expect(deniedBy(teapot)).toEqual(['200', '418 path']);
      expect(teapot[1]!.headers['content-type']).toBe('application/json');
      expect(JSON.parse(teapot[1]!.body)).toEqual({ busy: 'path=/teapot', retry: expect.any(Number) as unknown });
      expect(Number(teapot[1]!.headers['retry-after'])).toBe((JSON.parse(teapot[1]!.body) as { retry: number }).retry);
    });

    it('ignores a region header the client sent where the edge sets it (cf-ipcountry is removed first)', async () => {
      expect((await send('/', { 'cf-ipcountry': 'XX' })).status).toBe(200);
    });

    it.each([
      ['/r302', 302, 'https://example.com/busy?d=path%3D%2Fr302'],
      ['/r303', 303, 'https://example.com/slow'],
      ['/r307', 307, '/elsewhere'],
    ])('answers %s with a real %i redirect', async (path, status, location) => {
      const before = upstream.requests.length;
      const res = await send(path, {}, 'POST');
      expect(res.status).toBe(status);
      expect(res.headers.location).toBe(location);
      expect(upstream.requests.length).toBe(before);
    });

    it("puts the sidecar's headers on an allowed answer, replacing the upstream's, and warns above the soft limit", async () => {
      const answers = [await send('/soft'), await send('/soft')];
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(answers[0]!.headers['x-ratelimit-soft-warning']).toBeUndefined();
      expect(answers[1]!.headers['x-ratelimit-soft-warning']).toBeDefined();
      for (const a of answers) {
        expect(a.body).toBe('upstream');
        expect(a.headers['ratelimit']).toMatch(/;r=\d+;t=\d+$/); // one header, the sidecar's: the upstream's was replaced
      }
    });

    it("degrades: the upstream receives the rule's request header, never the one the client sent", async () => {
      const spoof = { 'x-degraded': 'spoofed' };
      const answers = [await send('/degrade', spoof), await send('/degrade', spoof)];
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      const seen = upstream.requests.slice(-2).map((r) => r.headers['x-degraded']);
      expect(seen).toEqual(['spoofed', 'true']);
    });

    it("Envoy's ext_authz counters equal the service's Check metrics", async () => {
      const stats = await envoy.stats('^http\\.ingress\\.ext_authz\\.');
      const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
      const sum = (result: string) =>
        [...metrics].filter(([k]) => k.startsWith('ratelimit_authz_checks_total{') && k.includes(`result="${result}"`)).reduce((n, [, v]) => n + v, 0);
      expect(stats.get('http.ingress.ext_authz.denied')).toBe(sum('over_limit'));
      expect(stats.get('http.ingress.ext_authz.ok')).toBe(sum('allowed') + sum('no_descriptors'));
      expect(stats.get('http.ingress.ext_authz.error') ?? 0).toBe(0);
    });
  });
}
