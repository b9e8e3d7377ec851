/**
 * What Envoy adds to the descriptors and does with the answer's metadata, through a real Envoy: a per-request
 * limit from dynamic metadata (RateLimit `limit` with a dynamic_metadata source, set here by a Lua filter from a
 * request header), `hits_addend` as Envoy 1.40 sets it (a number, 0 = a check that counts nothing), and
 * quota_mode, whose violations reach the upstream through the answer's dynamic metadata, as do the matched rules'
 * `metadata` (RESPONSE_DYNAMIC_METADATA).
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { describeEnvoy } from '../support/envoy.js';
import { envoyRlsCounts, serviceRlsCounts, startEnvoyStack, warmUp, type EnvoyStack } from '../support/envoy-stack.js';

const RULES = `domain: meta
descriptors:
  - key: tier
    metadata: {tier: gold, plan: {seats: 5}}
    rate_limit: {unit: minute, requests_per_unit: 100}
  - key: costly
    metadata: {tier: silver, plan: {cost: high}}
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: quota_a
    metadata: {quota: a, tier: bronze}
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: quota_b
    metadata: {quota: b}
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 3}
`;

/** x-limit: N → dynamic metadata test.limit.override = {requests_per_unit: N, unit: MINUTE} */
const LUA = `
function envoy_on_request(handle)
  local n = handle:headers():get("x-limit")
  if n ~= nil then
    handle:streamInfo():dynamicMetadata():set("test.limit", "override", {requests_per_unit = tonumber(n), unit = "MINUTE"})
  end
end
`;

const client = (key: string) => ({ request_headers: { header_name: 'x-client', descriptor_key: key } });

describeEnvoy('dynamic metadata, hits_addend and quota_mode through Envoy', () => {
  let stack: EnvoyStack;
  beforeAll(async () => {
    stack = await startEnvoyStack({
      backend: 'memory',
      rules: { 'meta.yaml': RULES },
      // The answer's dynamic metadata (quotaModeViolations) is sent only when asked for, as in the reference.
      settings: { responseDynamicMetadata: true },
      config: ({ service, upstream }) =>
        rlsBootstrap({
          service,
          upstream,
          domain: 'meta',
          before: [
            {
              name: 'envoy.filters.http.lua',
              typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua', default_source_code: { inline_string: LUA } },
            },
          ],
          routes: [
            {
              prefix: '/tier',
              rateLimits: [{ actions: [client('tier')], limit: { dynamic_metadata: { metadata_key: { key: 'test.limit', path: [{ key: 'override' }] } } } }],
            },
            { prefix: '/costly/five', perRoute: true, rateLimits: [{ actions: [client('costly')], hits_addend: { number: 5 } }] },
            { prefix: '/costly/peek', perRoute: true, rateLimits: [{ actions: [client('costly')], hits_addend: { number: 0 } }] },
            { prefix: '/costly', rateLimits: [{ actions: [client('costly')] }] },
            {
              prefix: '/rules-metadata',
              rateLimits: [{ actions: [client('tier')] }, { actions: [client('costly')] }, { actions: [client('quota_a')] }, { actions: [client('quota_b')] }],
              requestHeadersToAdd: [{ key: 'x-rules-metadata', value: '%DYNAMIC_METADATA(envoy.filters.http.ratelimit:metadata)%' }],
            },
            {
              prefix: '/quota',
              rateLimits: [{ actions: [client('quota_a')] }, { actions: [client('quota_b')] }],
              requestHeadersToAdd: [{ key: 'x-quota-violations', value: '%DYNAMIC_METADATA(envoy.filters.http.ratelimit:quotaModeViolations)%' }],
            },
          ],
        }),
    });
    await warmUp(stack, 'app', () => fetch(`${stack.url}/tier`, { headers: { 'x-client': 'warm-up' } }));
  });
  afterAll(async () => {
    await stack?.close();
  });
  beforeEach(() => {
    stack.service.timer.advance(3_600_000);
  });

  async function statuses(path: string, n: number, headers: Record<string, string>): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${stack.url}${path}`, { headers });
      await res.text();
      out.push(res.status);
    }
    return out;
  }

  it('a limit from dynamic metadata replaces the configured one for that request', async () => {
    expect(await statuses('/tier', 4, { 'x-client': 'small', 'x-limit': '3' })).toEqual([200, 200, 200, 429]);
    const res = await fetch(`${stack.url}/tier`, { headers: { 'x-client': 'small', 'x-limit': '3' } });
    await res.text();
    expect(res.headers.get('x-ratelimit-limit')).toBe('3, 3;w=60');
    // without the metadata the configured 100 a minute holds (a counter of its own)
    expect(await statuses('/tier', 5, { 'x-client': 'small' })).toEqual([200, 200, 200, 200, 200]);
  });

  it('hits_addend: a number counts that many hits; 0 checks without counting (the peeks left room for two 5s)', async () => {
    expect(await statuses('/costly/peek', 3, { 'x-client': 'c1' })).toEqual([200, 200, 200]);
    expect(await statuses('/costly/five', 3, { 'x-client': 'c1' })).toEqual([200, 200, 429]);
    const peek = await fetch(`${stack.url}/costly/peek`, { headers: { 'x-client': 'c1' } });
    await peek.text();
    // a check at 10 of 10 is allowed (only a count above the limit fails it, docs/algorithms.md) and sees 0 left
    expect([peek.status, peek.headers.get('x-ratelimit-remaining')]).toEqual([200, '0']);
    expect(await statuses('/costly/five', 1, { 'x-client': 'c2' })).toEqual([200]);
    const res = await fetch(`${stack.url}/costly`, { headers: { 'x-client': 'c2' } });
    await res.text();
    expect(res.headers.get('x-ratelimit-remaining')).toBe('4'); // 5 + 1 of 10
  });

  it('quota_mode: over one quota the request passes and the upstream learns which; over all of them, 429', async () => {
    const before = stack.upstream.requests.length;
    expect(await statuses('/quota', 4, { 'x-client': 'q' })).toEqual([200, 200, 200, 429]);
    const seen = stack.upstream.requests.slice(before).map((r) => r.headers['x-quota-violations']);
    // 1st, 2nd: no violation; 3rd: quota_a (descriptor 0) is over; 4th: both are, so it is rejected
    expect(seen).toEqual(['[]', '[]', '[0]']);
  });

  it("the matched rules' metadata reaches Envoy's dynamic metadata, merged, from the descriptors that passed", async () => {
    const before = stack.upstream.requests.length;
    expect(await statuses('/rules-metadata', 4, { 'x-client': 'm' })).toEqual([200, 200, 200, 429]);
    const seen = stack.upstream.requests.slice(before).map((r) => JSON.parse(String(r.headers['x-rules-metadata'])) as unknown);
    // In request order the first value of a key stays and mappings merge; from the 3rd request on quota_a (2 a
    // minute) is over, so its metadata is left out and quota_b's `quota` shows.
    const merged = { tier: 'gold', plan: { seats: 5, cost: 'high' } };
    expect(seen).toEqual([
      { ...merged, quota: 'a' },
      { ...merged, quota: 'a' },
      { ...merged, quota: 'b' },
    ]);
  });

  it("Envoy's counters agree with the service's decisions", async () => {
    const envoy = await envoyRlsCounts(stack.envoy, 'app');
    const service = await serviceRlsCounts(stack.service);
    expect(envoy).toEqual({ ok: service.ok, overLimit: service.overLimit, error: 0, failureModeAllowed: 0 });
  });
});
