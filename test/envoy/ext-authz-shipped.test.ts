/**
 * envoy-ext-authz.yaml as shipped (only addresses substituted, docs/envoy.md) in front of the service on memory
 * with the shipped rules (config/: domain "web" of config/web.yaml), a real Envoy between an HTTP client and a
 * recording upstream. Through Envoy: no spelling of /login escapes the sign-in limit. The denied
 * answer as a client sees it, and Envoy's ext_authz counters against the service's metrics.
 *
 * The service runs on a fake clock: each test moves it a minute on, so windows start afresh.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { shippedEnvoyConfig } from '../support/envoy-config.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { rawHttp } from '../support/http-raw.js';
import { scrapeMetrics, type Samples } from '../support/scrape.js';
import { startTestService, type TestService } from '../support/service.js';

const ROOT = join(import.meta.dirname, '../..');
const EXT_AUTHZ =
  'static_resources.listeners[name=ingress].filter_chains[0].filters[0].typed_config.http_filters[name=envoy.filters.http.ext_authz].typed_config';
const rules = { 'example.yaml': readFileSync(join(ROOT, 'config/example.yaml'), 'utf8'), 'web.yaml': readFileSync(join(ROOT, 'config/web.yaml'), 'utf8') };

/** Service counter `ratelimit_authz_checks_total` for one result, all domains. */
function checks(samples: Samples, result: string): number {
  let sum = 0;
  for (const [key, value] of samples) if (key.startsWith('ratelimit_authz_checks_total{') && key.includes(`result="${result}"`)) sum += value;
  return sum;
}

describeEnvoy('envoy-ext-authz.yaml as shipped, through a real Envoy', () => {
  let service: TestService;
  let upstream: Upstream;
  let envoy: EnvoyProcess;
  let port: number;

  beforeAll(async () => {
    service = await startTestService(rules, { authzClientAddressHeader: 'x-client-address' }); // as deploy/k8s/ext-authz
    upstream = await startUpstream();
    envoy = await startEnvoy(
      shippedEnvoyConfig(join(ROOT, 'envoy-ext-authz.yaml'), {
        clusters: { ratelimit: { address: '127.0.0.1', port: service.service.grpcPort }, app: { address: '127.0.0.1', port: upstream.port } },
        // The shipped 50 ms suit a production sidecar; on the loaded 2-core CI machine an answer can miss them,
        // and a late answer fails open (200), which would hide the decision these tests check.
        set: { [`${EXT_AUTHZ}.grpc_service.timeout`]: '2s' },
      }),
    );
    port = await envoy.listenerPort('ingress');
  });
  afterAll(async () => {
    await envoy?.stop();
    await upstream?.close();
    await service?.close();
  });
  beforeEach(() => {
    service.timer.advance(61_000);
  });

  it('counts every spelling of /login against the sign-in limit', async () => {
    const spellings = [
      '/login/',
      '//login',
      '/%6cogin',
      '/a/../login',
      '/./login?next=/a',
      '/login;jsessionid=1',
      '/%2e%2e/login',
      '/login/.',
      '/LOGIN/../login',
      '/login',
    ];
    const statuses: number[] = [];
    for (const path of spellings) statuses.push((await rawHttp(port, 'POST', path)).status);
    expect(statuses).toEqual(spellings.map(() => 200));
    // What the upstream saw: Envoy's normalized spellings (normalize_path, merge_slashes).
    expect(upstream.requests.slice(-spellings.length).map((r) => r.url)).toEqual([
      '/login/',
      '/login',
      '/login',
      '/login',
      '/login?next=/a',
      '/login;jsessionid=1',
      '/login',
      '/login/',
      '/login',
      '/login',
    ]);
    const eleventh = await rawHttp(port, 'POST', '//a/./b/../../login/');
    expect(eleventh.status).toBe(429);
    // Another address's limit and another path are untouched.
    expect((await rawHttp(port, 'POST', '/logins')).status).toBe(200);
  });

  it('answers an escaped slash with a redirect to the unescaped path, never reaching the upstream with it', async () => {
    const before = upstream.requests.length;
    const res = await rawHttp(port, 'POST', '/%2Flogin');
    expect([301, 307, 308]).toContain(res.status);
    expect(res.headers.location).toBe('/login');
    expect(upstream.requests.length).toBe(before);
  });

  it('shows the client the denied answer: 429, retry-after, the RateLimit headers and the body', async () => {
    const ua = { 'user-agent': 'python-requests/2.32' };
    const first = await rawHttp(port, 'GET', '/catalog', ua);
    expect(first.status).toBe(200);
    const second = await rawHttp(port, 'GET', '/catalog', ua);
    expect(second.status).toBe(429);
    const retry = Number(second.headers['retry-after']);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60);
    // Every limit the request touched, as docs/responses.md shows; the scraper's is spent.
    expect(second.headers['ratelimit-policy']).toBe(
      '"web.remote_address";q=20;w=1, "web.masked_remote_address";q=300;w=1, "web.header_match_scraper";q=1;w=60',
    );
    expect(second.headers['ratelimit']).toBe(`"web.remote_address";r=19;t=1, "web.masked_remote_address";r=299;t=1, "web.header_match_scraper";r=0;t=${retry}`);
    expect(second.body).toBe('');
    expect(second.headers['x-envoy-upstream-service-time']).toBeUndefined(); // Envoy answered; the upstream was not asked
  });

  it("Envoy's ext_authz counters agree with the service's Check metrics", async () => {
    const envoyStats = await envoy.stats('ext_authz');
    const metrics = await scrapeMetrics(service.httpBase.replace('http://', ''));
    const ok = envoyStats.get('http.ingress.ext_authz.ok') ?? 0;
    const denied = envoyStats.get('http.ingress.ext_authz.denied') ?? 0;
    expect(ok).toBeGreaterThan(0);
    expect(denied).toBeGreaterThan(0);
    expect(denied).toBe(checks(metrics, 'over_limit'));
    expect(ok).toBe(checks(metrics, 'allowed') + checks(metrics, 'no_descriptors'));
    // No call failed or missed Envoy's deadline, so nothing was let through unasked.
    expect(envoyStats.get('http.ingress.ext_authz.error') ?? 0).toBe(0);
    expect(envoyStats.get('http.ingress.ext_authz.failure_mode_allowed') ?? 0).toBe(0);
    // The route's cluster counts the same.
    expect(envoyStats.get('cluster.app.ext_authz.ok')).toBe(ok);
    expect(envoyStats.get('cluster.app.ext_authz.denied')).toBe(denied);
  });
});
