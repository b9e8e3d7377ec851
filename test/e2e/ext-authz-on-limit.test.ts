/**
 * The on_limit block through ext_authz Check, byte for byte: a redirect rule answers a real 3xx with its
 * `location`, a JSON body rule answers its status, content type and body, and a degrade rule lets the request
 * through with the upstream headers in `ok_response.headers`. The expected answers are protobufjs' canonical
 * encoding of the CheckResponse written out here by hand.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, authzType, encodeExpectedResponse, envoyCheckRequest, option } from '../support/authz-client.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = {
  'web.yaml': `domain: web
authz:
  rate_limits:
    - actions: [{request_headers: {header_name: x-client, descriptor_key: client}}]
descriptors:
  - key: client
    value: signup
    rate_limit:
      unit: hour
      requests_per_unit: 1
      name: signup
      on_limit:
        action: redirect
        status: 303
        location: "https://example.com/slow-down?c={{descriptor}}&after={{retry_after}}"
  - key: client
    value: api
    rate_limit:
      unit: minute
      requests_per_unit: 1
      name: api
      on_limit:
        status: 503
        content_type: application/json
        body: '{"error":"slow down","limit":{{limit}},"retry_after":{{retry_after}},"who":"{{descriptor}}"}'
        headers: {x-limit-reason: api}
  - key: client
    value: search
    rate_limit:
      unit: minute
      requests_per_unit: 1
      name: search
      on_limit:
        action: degrade
        request_headers: {x-degraded: "true"}
`,
};

const request = (client: string) => {
  const type = authzType('CheckRequest');
  const spec = envoyCheckRequest({ ip: '192.0.2.7', headers: { 'x-client': client }, contextExtensions: { ratelimit_domain: 'web' } });
  return type.encode(type.fromObject(spec)).finish();
};

describe('on_limit through ext_authz Check', () => {
  let svc: TestService;
  let authz: AuthzTestClient;
  beforeAll(async () => {
    svc = await startTestService(RULES); // FakeClock at 1_700_000_000 s: 40 s left in the minute, 2800 s in the hour
    authz = new AuthzTestClient(svc.grpcAddress);
  });
  afterAll(async () => {
    authz.close();
    await svc.close();
  });

  it('a redirect rule answers 303 with its location, byte for byte', async () => {
    await authz.checkRaw(request('signup'));
    const denied = await authz.checkRaw(request('signup'));
    const expected = encodeExpectedResponse({
      status: { code: 8, message: 'over rate limit: redirected (303)' },
      denied_response: {
        status: { code: 303 },
        headers: [
          option('retry-after', '2800'),
          option('ratelimit-policy', '"signup";q=1;w=3600'),
          option('ratelimit', '"signup";r=0;t=2800'),
          option('location', 'https://example.com/slow-down?c=client%3Dsignup&after=2800'),
        ],
      },
    });
    expect(denied.toString('hex')).toBe(expected.toString('hex'));
  });

  it('a body rule answers its status, content type, headers and JSON body, byte for byte', async () => {
    await authz.checkRaw(request('api'));
    const denied = await authz.checkRaw(request('api'));
    const body = '{"error":"slow down","limit":1,"retry_after":40,"who":"client=api"}';
    expect(JSON.parse(body)).toBeTruthy();
    const expected = encodeExpectedResponse({
      status: { code: 8, message: 'over rate limit' },
      denied_response: {
        status: { code: 503 },
        headers: [
          option('retry-after', '40'),
          option('ratelimit-policy', '"api";q=1;w=60'),
          option('ratelimit', '"api";r=0;t=40'),
          option('content-type', 'application/json'),
          option('x-limit-reason', 'api'),
        ],
        body,
      },
    });
    expect(denied.toString('hex')).toBe(expected.toString('hex'));
  });

  it('a degrade rule lets the request through with the upstream headers', async () => {
    await authz.checkRaw(request('search'));
    const degraded = await authz.checkRaw(request('search'));
    const expected = encodeExpectedResponse({
      status: {},
      ok_response: {
        headers: [option('x-degraded', 'true')],
        response_headers_to_add: [option('ratelimit-policy', '"search";q=1;w=60'), option('ratelimit', '"search";r=0;t=40')],
      },
    });
    expect(degraded.toString('hex')).toBe(expected.toString('hex'));
  });
});
