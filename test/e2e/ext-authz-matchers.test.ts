/**
 * header_value_match with each of Envoy's header matchers (exact, prefix, suffix, contains, safe_regex,
 * present, invert; string_match and the older direct fields; expect_match false), and
 * query_parameter_value_match, end to end: every matching request hits a requests_per_unit: 0 rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, type HttpRequestSpec } from '../support/authz-client.js';
import { startTestService, type TestService } from '../support/service.js';

/** One rate_limits item per matcher: a match produces (m, <name>), which the rules block. */
const MATCHERS: Record<string, string> = {
  exact: '{name: x-env, string_match: {exact: Staging}}',
  exact_ic: '{name: x-env, string_match: {exact: prod, ignore_case: true}}',
  prefix: '{name: user-agent, prefix_match: "curl/"}',
  suffix: '{name: x-forwarded-host, string_match: {suffix: .internal}}',
  contains: '{name: user-agent, contains_match: "bot"}',
  regex: '{name: x-version, safe_regex_match: {regex: "v[0-9]+\\\\.0"}}',
  sregex: '{name: x-build, string_match: {safe_regex: {regex: "(a+)+$"}}}',
  present: '{name: x-debug, present_match: true}',
  absent: '{name: x-trace, present_match: false}',
  invert: '{name: x-region, string_match: {exact: eu}, invert_match: true}',
};

const authz = Object.entries(MATCHERS)
  .map(([name, m]) => `    - actions: [{header_value_match: {descriptor_key: m, descriptor_value: ${name}, headers: [${m}]}}]`)
  .join('\n');

const RULES = `domain: matchers
authz:
  rate_limits:
${authz}
    - actions: [{header_value_match: {descriptor_key: no_auth, descriptor_value: 'yes', expect_match: false, headers: [{name: authorization}]}}]
    - actions: [{query_parameter_value_match: {descriptor_value: q, query_parameters: [{name: debug, string_match: {exact: '1'}}, {name: token}]}}]
descriptors:
  - key: m
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: no_auth
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: query_match
    rate_limit: {unit: minute, requests_per_unit: 0}
`;

describe('ext_authz Check: header_value_match and query_parameter_value_match', () => {
  let svc: TestService;
  let client: AuthzTestClient;
  const base = { authorization: 'Bearer t', 'x-trace': '1', 'x-region': 'eu' };
  const denied = async (spec: HttpRequestSpec) => {
    const r = await client.check({ ...spec, headers: { ...base, ...spec.headers }, contextExtensions: { ratelimit_domain: 'matchers' } });
    return r.status?.code !== 0;
  };

  beforeAll(async () => {
    svc = await startTestService({ 'matchers.yaml': RULES });
    client = new AuthzTestClient(svc.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await svc.close();
  });

  it('a request no matcher matches is allowed', async () => {
    expect(await denied({})).toBe(false);
  });

  it.each([
    ['exact', { 'x-env': 'Staging' }, { 'x-env': 'staging' }],
    ['exact, ignore_case', { 'x-env': 'PROD' }, { 'x-env': 'production' }],
    ['prefix', { 'user-agent': 'curl/8.4' }, { 'user-agent': 'Mozilla curl/8' }],
    ['suffix', { 'x-forwarded-host': 'db.internal' }, { 'x-forwarded-host': 'internal.example' }],
    ['contains', { 'user-agent': 'Googlebot/2.1' }, { 'user-agent': 'Mozilla/5.0' }],
    ['safe_regex (a full match)', { 'x-version': 'v12.0' }, { 'x-version': 'v12.01' }],
    ['present', { 'x-debug': '' }, {}],
    ['invert', { 'x-region': 'us' }, { 'x-region': 'eu' }],
  ])('%s', async (_name, matching, other) => {
    expect(await denied({ headers: matching })).toBe(true);
    expect(await denied({ headers: other })).toBe(false);
  });

  it('present_match: false matches an absent header', async () => {
    const r = await client.check({ headers: { authorization: 'x', 'x-region': 'eu' }, contextExtensions: { ratelimit_domain: 'matchers' } });
    expect(r.status?.code).not.toBe(0);
  });

  it('invert_match on an absent header matches (the value matcher cannot)', async () => {
    const r = await client.check({ headers: { authorization: 'x', 'x-trace': '1' }, contextExtensions: { ratelimit_domain: 'matchers' } });
    expect(r.status?.code).not.toBe(0);
  });

  it('expect_match: false produces the entry when the headers do not match', async () => {
    const r = await client.check({ headers: { 'x-trace': '1', 'x-region': 'eu' }, contextExtensions: { ratelimit_domain: 'matchers' } });
    expect(r.status?.code).not.toBe(0);
  });

  it('safe_regex is linear time (RE2): a catastrophic pattern for backtracking engines answers at once', async () => {
    const started = performance.now();
    expect(await denied({ headers: { 'x-build': `${'a'.repeat(3000)}!` } })).toBe(false);
    expect(await denied({ headers: { 'x-build': 'aaaa' } })).toBe(true);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('query_parameter_value_match: every matcher must match (string_match and presence)', async () => {
    expect(await denied({ path: '/a?debug=1&token=' })).toBe(true);
    expect(await denied({ path: '/a?token=x&debug=1#frag' })).toBe(true);
    expect(await denied({ path: '/a?debug=1' })).toBe(false);
    expect(await denied({ path: '/a?debug=2&token=x' })).toBe(false);
  });
});
