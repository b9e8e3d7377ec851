/**
 * The shipped envoy.yaml as written (only addresses substituted, docs/envoy.md) in front of the service with
 * config/example.yaml, on memory and on Redis: the descriptors Envoy builds reach the example's rules (per
 * client address, per verified user, the daily quota), the N+1st request gets Envoy's 429, the headers reach the
 * client as the README shows, a client-sent x-user cannot lift a limit, and Envoy's counters agree with the
 * service's metrics. The service runs on a fake clock: a test moves it a day on to start from fresh counters.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { shippedEnvoyConfig } from '../support/envoy-config.js';
import { describeEnvoy } from '../support/envoy.js';
import { envoyRlsCounts, minus, serviceRlsCounts, startEnvoyStack, warmUp, type Backend, type EnvoyStack, type RlsCounts } from '../support/envoy-stack.js';
import { startIdentityProvider, type IdentityProvider } from '../support/envoy-upstream.js';
import { RlsTestClient } from '../support/rls-client.js';
import { makeTestPki, type TestPki } from '../support/tls.js';

const ROOT = join(import.meta.dirname, '../..');
const DAY_MS = 86_400_000;
/**
 * The one change beyond addresses: Envoy's rate-limit timeout (shipped 50 ms) is 2 s here. The CI machine has 2
 * shared cores at a load of 10 and more; there, 20 requests at once had 80 % of their rate-limit calls time out at
 * 50 ms (the service measured 1.5 ms per decision; the rest was waiting for a CPU), and a call that times out fails
 * open, turning the 429s these tests look for into 200s. Latency is measured by the benchmark, not here.
 */
const RLS_TIMEOUT = {
  'static_resources.listeners[name=ingress].filter_chains[0].filters[0].typed_config.http_filters[name=envoy.filters.http.ratelimit].typed_config.timeout':
    '2s',
};

for (const backend of ['memory', 'redis'] as Backend[]) {
  describeEnvoy(`shipped envoy.yaml → service on ${backend}`, () => {
    let pki: TestPki;
    let idp: IdentityProvider;
    let stack: EnvoyStack;
    let envoyBase: RlsCounts;
    let serviceBase: RlsCounts;
    let rls: RlsTestClient;
    let directCalls = 0;

    beforeAll(async () => {
      pki = await makeTestPki();
      idp = await startIdentityProvider(pki);
      stack = await startEnvoyStack({
        backend,
        rules: { 'example.yaml': readFileSync(join(ROOT, 'config/example.yaml'), 'utf8') },
        config: ({ service, upstream }) =>
          shippedEnvoyConfig(join(ROOT, 'envoy.yaml'), {
            clusters: { ratelimit: service, app: upstream, auth: { address: '127.0.0.1', port: idp.port } },
            set: RLS_TIMEOUT,
          }),
      });
      rls = new RlsTestClient(stack.service.grpcAddress);
      await warmUp(stack, 'app', () => fetch(`${stack.url}/warm-up`));
      envoyBase = await envoyRlsCounts(stack.envoy, 'app');
      serviceBase = await serviceRlsCounts(stack.service);
    });
    afterAll(async () => {
      rls?.close();
      await stack?.close();
      await idp?.close();
      pki?.remove();
    });
    beforeEach(() => {
      stack.service.timer.advance(DAY_MS); // every window of the example rules starts afresh
    });

    const get = (path: string, headers: Record<string, string> = {}): Promise<Response> => fetch(`${stack.url}${path}`, { headers });
    const bearer = (claims: Record<string, unknown>): Record<string, string> => ({ authorization: `Bearer ${idp.sign(claims)}` });

    it('limits per client address (remote_address, 20/s): 20 pass with the headers the README shows, the 21st gets 429 from Envoy', async () => {
      const before = stack.upstream.requests.length;
      for (let i = 1; i <= 20; i++) {
        const res = await get('/page');
        expect(res.status).toBe(200);
        await res.text();
        expect(res.headers.get('ratelimit-policy')).toBe('"per_ip";q=20;w=1');
        expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"per_ip";r=${20 - i};t=\\d+$`));
        expect(res.headers.get('x-ratelimit-limit')).toBe('20, 20;w=1;name="per_ip"');
        expect(res.headers.get('x-ratelimit-remaining')).toBe(String(20 - i));
      }
      expect(stack.upstream.requests.length - before).toBe(20);
      const res = await get('/page');
      expect(res.status).toBe(429);
      await res.text();
      expect(res.headers.get('x-envoy-ratelimited')).toBe('true');
      expect(res.headers.get('retry-after')).toMatch(/^[12]$/);
      expect(res.headers.get('ratelimit')).toMatch(/^"per_ip";r=0;t=[12]$/);
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(stack.upstream.requests.length - before).toBe(20);
    });

    it('limits per verified user (JWT sub → x-user); a client-sent x-user is stripped and lifts nothing', async () => {
      // plan "pro" replaces per_ip, so the user's token bucket (burst 30) is the limit that binds
      const alice = bearer({ sub: 'alice', plan: 'pro' });
      const before = stack.upstream.requests.length;
      for (let i = 1; i <= 30; i++) {
        const res = await get('/api/items', { ...alice, 'x-user': `svc-${i}`, 'x-plan': 'pro' });
        expect(res.status).toBe(200);
        await res.text();
      }
      const seen = stack.upstream.requests.slice(before);
      expect(seen.map((r) => [r.headers['x-user'], r.headers['x-plan']])).toEqual(Array.from({ length: 30 }, () => ['alice', 'pro']));
      // a svc-* identity (200/s) would pass: the header the client sent is gone before the descriptors are built
      const over = await get('/api/items', { ...alice, 'x-user': 'svc-robot' });
      expect(over.status, `service: ${JSON.stringify(await serviceRlsCounts(stack.service))}`).toBe(429);
      await over.text();
      expect(over.headers.get('x-envoy-ratelimited')).toBe('true');
      expect(over.headers.get('ratelimit')).toMatch(/"user_burst";r=0;t=1/);
      expect(over.headers.get('x-ratelimit-limit')).toMatch(/^10, 10;w=1;name="user_burst"/);
      // another verified user has its own counter
      const bob = await get('/api/items', bearer({ sub: 'bob', plan: 'pro' }));
      expect(bob.status).toBe(200);
      await bob.text();
      // no token: jwt_authn refuses before any descriptor, whatever x-user says
      const anonymous = await get('/api/items', { 'x-user': 'svc-robot' });
      expect(anonymous.status).toBe(401);
      await anonymous.text();
      expect(stack.upstream.requests.length - before).toBe(31);
    });

    it('enforces the daily quota per user (plan free: 1000 a day); the 1001st gets 429 with retry-after to midnight', async () => {
      const carol = bearer({ sub: 'carol', plan: 'free' });
      const daily = async (n: number): Promise<{ status: number; remaining: string | undefined }[]> => {
        const out = [];
        for (let i = 0; i < n; i++) {
          const res = await get('/api/report', carol);
          await res.text();
          out.push({ status: res.status, remaining: /"free_daily";r=(\d+)/.exec(res.headers.get('ratelimit') ?? '')?.[1] });
        }
        return out;
      };
      // Envoy's descriptor (plan=free, user=carol) counts against free_daily...
      expect(await daily(5)).toEqual([999, 998, 997, 996, 995].map((r) => ({ status: 200, remaining: String(r) })));
      // ...the same counter a direct call with that descriptor spends (990 hits: 1000 requests through Envoy
      // would take half a minute on a loaded CI machine, and per_ip/user_burst would bind first)
      const direct = await rls.ask(
        'edge',
        [
          [
            ['plan', 'free'],
            ['user', 'carol'],
          ],
        ],
        990,
      );
      directCalls++;
      expect(direct.statuses[0]?.limit_remaining).toBe(5);
      expect(await daily(5)).toEqual([4, 3, 2, 1, 0].map((r) => ({ status: 200, remaining: String(r) })));
      const res = await get('/api/report', carol);
      expect(res.status).toBe(429);
      await res.text();
      const now = stack.service.clock.nowMs();
      const toMidnight = Math.ceil((Math.ceil(now / DAY_MS) * DAY_MS - now) / 1000);
      expect(res.headers.get('retry-after')).toBe(String(toMidnight));
      expect(res.headers.get('x-envoy-ratelimited')).toBe('true');
      expect(res.headers.get('ratelimit')).toContain(`"free_daily";r=0;t=${toMidnight}`);
      expect(res.headers.get('ratelimit-policy')).toContain('"free_daily";q=1000;w=86400');
      // dave on the same plan has all of his quota
      const dave = await get('/api/report', bearer({ sub: 'dave', plan: 'free' }));
      expect([dave.status, /"free_daily";r=(\d+)/.exec(dave.headers.get('ratelimit') ?? '')?.[1]]).toEqual([200, '999']);
      await dave.text();
    });

    it("Envoy's rate-limit counters agree with the service's metrics", async () => {
      const envoy = minus(await envoyRlsCounts(stack.envoy, 'app'), envoyBase);
      const service = minus(await serviceRlsCounts(stack.service), serviceBase);
      expect(envoy.error).toBe(0);
      expect(envoy.failureModeAllowed).toBe(0);
      expect(service.error).toBe(0);
      expect(service.failureModeAllowed).toBe(0);
      expect(envoy.ok).toBeGreaterThan(50);
      expect(envoy.overLimit).toBeGreaterThanOrEqual(3);
      // the service also answered the test's direct calls
      expect({ ok: service.ok - directCalls, overLimit: service.overLimit }).toEqual({ ok: envoy.ok, overLimit: envoy.overLimit });
    });
  });
}
