/**
 * ext_authz Check end to end over a real gRPC socket: descriptors built from CheckRequests as Envoy sends
 * them, by each action of the `authz:` block, limited by the same rules as ShouldRateLimit (memory store,
 * FakeClock). Each scenario has its own domain, picked by the route's context_extensions.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthzTestClient, type HttpRequestSpec, type WireCheckResponse } from '../support/authz-client.js';
import { RlsTestClient } from '../support/rls-client.js';
import { countryRecord, writeMmdb } from '../support/mmdb-writer.js';
import { startTestService, type TestService } from '../support/service.js';

const file = (domain: string, authz: string, descriptors: string) => `domain: ${domain}\nauthz:\n  rate_limits:\n${authz}\ndescriptors:\n${descriptors}\n`;

const RULES: Record<string, string> = {
  'ip.yaml': file('per-ip', '    - actions: [{remote_address: {}}]', '  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 2}'),
  'subnet.yaml': file(
    'per-subnet',
    '    - actions: [{masked_remote_address: {v4_prefix_mask_len: 24, v6_prefix_mask_len: 64}}]',
    '  - key: masked_remote_address\n    value: 10.1.2.0/24\n    rate_limit: {unit: minute, requests_per_unit: 0}\n  - key: masked_remote_address\n    rate_limit: {unit: minute, requests_per_unit: 3}',
  ),
  'header.yaml': file(
    'per-header',
    '    - actions: [{request_headers: {header_name: X-Api-Key, descriptor_key: api_key}}]\n    - actions: [{generic_key: {descriptor_value: tenants}}, {request_headers: {header_name: x-tenant, descriptor_key: tenant, skip_if_absent: true}}]',
    '  - key: api_key\n    value: banned\n    rate_limit: {unit: minute, requests_per_unit: 0}\n  - key: api_key\n    rate_limit: {unit: minute, requests_per_unit: 2}\n  - key: generic_key\n    value: tenants\n    rate_limit: {unit: minute, requests_per_unit: 100, name: all-tenants}\n    descriptors:\n      - key: tenant\n        rate_limit: {unit: minute, requests_per_unit: 1, name: per-tenant}',
  ),
  'cookie.yaml': file(
    'per-cookie',
    '    - actions: [{cookie: {name: session, descriptor_key: session}}]',
    '  - key: session\n    value: evil\n    rate_limit: {unit: minute, requests_per_unit: 0}\n  - key: session\n    rate_limit: {unit: minute, requests_per_unit: 2}',
  ),
  'path.yaml': file(
    'per-path',
    '    - actions: [{method: {}}, {path: {strip_query: true}}]\n    - actions: [{host: {}}, {query_parameters: {query_parameter_name: page, descriptor_key: page}}]',
    '  - key: method\n    value: POST\n    descriptors:\n      - key: path\n        value: /login\n        rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: host\n    value: shop.example.com\n    descriptors:\n      - key: page\n        value: "9*"\n        rate_limit: {unit: minute, requests_per_unit: 0}',
  ),
  'region.yaml': file(
    'per-region',
    '    - actions: [{region: {headers: [cf-ipcountry]}}]',
    '  - key: region\n    value: XX\n    rate_limit: {unit: minute, requests_per_unit: 0}\n  - key: region\n    value: GB\n    rate_limit: {unit: minute, requests_per_unit: 2}\n  - key: region\n    rate_limit: {unit: minute, requests_per_unit: 1000}',
  ),
};

const blocked = (r: WireCheckResponse) => r.http_response === 'denied_response' && r.status?.code !== 0;
const allowed = (r: WireCheckResponse) => r.http_response === 'ok_response' && r.status?.code === 0;
const policy = (r: WireCheckResponse) => r.ok_response?.response_headers_to_add.find((h) => h.header.key === 'ratelimit-policy')?.header.value;

describe('ext_authz Check: descriptors from the request', () => {
  let svc: TestService;
  let client: AuthzTestClient;
  let geoDir: string;
  const check = (domain: string, spec: HttpRequestSpec) =>
    client.check({ ...spec, contextExtensions: { ratelimit_domain: domain, ...spec.contextExtensions } });
  const series = async (domain: string, spec: HttpRequestSpec, n: number) => {
    const out: boolean[] = [];
    for (let i = 0; i < n; i++) out.push(allowed(await check(domain, spec)));
    return out;
  };

  beforeAll(async () => {
    geoDir = mkdtempSync(join(tmpdir(), 'rl-geo-'));
    writeFileSync(
      join(geoDir, 'country.mmdb'),
      writeMmdb([
        { network: '81.2.69.0/24', record: countryRecord('GB') },
        { network: '2a02:c7f::/32', record: countryRecord('GB') },
        { network: '5.6.0.0/16', record: countryRecord('XX') },
      ]),
    );
    svc = await startTestService(
      {
        ...RULES,
        'geo.yaml': file(
          'geo',
          '    - actions: [{region: {}}]',
          '  - key: region\n    value: GB\n    rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: region\n    value: XX\n    rate_limit: {unit: minute, requests_per_unit: 0}',
        ),
      },
      { geoipDb: join(geoDir, 'country.mmdb'), authzRegionHeaders: ['x-country-code'] },
    );
    client = new AuthzTestClient(svc.grpcAddress);
  });
  afterAll(async () => {
    client.close();
    await svc.close();
    rmSync(geoDir, { recursive: true, force: true });
  });

  it('per IP (remote_address), IPv4 and IPv6, with RateLimit headers on allowed answers', async () => {
    expect(await series('per-ip', { ip: '10.0.0.1' }, 3)).toEqual([true, true, false]);
    expect(await series('per-ip', { ip: '10.0.0.2' }, 1)).toEqual([true]);
    // The same IPv6 address written two ways is one client.
    expect(await series('per-ip', { ip: '2001:DB8:0:0::7' }, 2)).toEqual([true, true]);
    expect(await series('per-ip', { ip: '2001:db8::7' }, 1)).toEqual([false]);
    expect(policy(await check('per-ip', { ip: '10.0.0.3' }))).toBe('"per-ip.remote_address";q=2;w=60');
  });

  it('an IPv4-mapped source address is the IPv4 client: one counter with ShouldRateLimit, IPv4 rules match', async () => {
    const rls = new RlsTestClient(svc.grpcAddress);
    try {
      // Envoy's own remote_address on a dual-stack listener is the dotted quad; ext_authz may get either form.
      expect(await series('per-ip', { ip: '::ffff:203.0.113.5' }, 1)).toEqual([true]);
      const shared = await rls.shouldRateLimit({ domain: 'per-ip', descriptors: [{ entries: [{ key: 'remote_address', value: '203.0.113.5' }] }] });
      expect(shared.overall_code).toBe('OK');
      expect(await series('per-ip', { ip: '::ffff:cb00:7105' }, 1)).toEqual([false]); // 2 per minute: spent
      expect(policy(await check('per-ip', { ip: '::ffff:203.0.113.6' }))).toBe('"per-ip.remote_address";q=2;w=60');
      expect(await series('per-subnet', { ip: '::ffff:10.1.2.9' }, 1)).toEqual([false]); // the 10.1.2.0/24 block
    } finally {
      rls.close();
    }
  });

  it('per /24 and /64 (masked_remote_address), with a requests_per_unit: 0 block on one subnet', async () => {
    expect(await series('per-subnet', { ip: '10.1.2.77' }, 1)).toEqual([false]);
    expect(await series('per-subnet', { ip: '10.1.3.1' }, 2)).toEqual([true, true]);
    expect(await series('per-subnet', { ip: '10.1.3.250' }, 2)).toEqual([true, false]);
    expect(await series('per-subnet', { ip: '10.1.4.1' }, 1)).toEqual([true]);
    expect(await series('per-subnet', { ip: '2001:db8:1:2::5' }, 3)).toEqual([true, true, true]);
    expect(await series('per-subnet', { ip: '2001:db8:1:2:ffff::1' }, 1)).toEqual([false]);
  });

  it('per header (request_headers): missing header drops the descriptor; skip_if_absent keeps it without the entry', async () => {
    // No x-api-key: that descriptor is dropped; no x-tenant: [generic_key=tenants] alone, the 100/min limit.
    const anonymous = await check('per-header', {});
    expect(allowed(anonymous)).toBe(true);
    expect(policy(anonymous)).toBe('"all-tenants";q=100;w=60');
    expect(await series('per-header', { headers: { 'x-api-key': 'k1' } }, 3)).toEqual([true, true, false]);
    expect(await series('per-header', { headers: { 'x-api-key': 'banned' } }, 1)).toEqual([false]);
    expect(await series('per-header', { headers: { 'x-tenant': 't1' } }, 2)).toEqual([true, false]);
    expect(await series('per-header', { headers: { 'x-tenant': 't2' } }, 1)).toEqual([true]);
  });

  it('per cookie, and a cookie value blocked', async () => {
    const spec = { headers: { cookie: 'theme=dark; session=abc123; lang=en' } };
    expect(await series('per-cookie', spec, 3)).toEqual([true, true, false]);
    expect(await series('per-cookie', { headers: { cookie: 'session="evil"' } }, 1)).toEqual([false]);
    expect(await series('per-cookie', { headers: { cookie: 'other=1' } }, 5)).toEqual([true, true, true, true, true]);
  });

  it('per method and path (query stripped), per host and query parameter', async () => {
    expect(await series('per-path', { method: 'POST', path: '/login?next=/a' }, 1)).toEqual([true]);
    expect(await series('per-path', { method: 'POST', path: '/login?next=/b' }, 1)).toEqual([false]);
    expect(await series('per-path', { method: 'GET', path: '/login' }, 3)).toEqual([true, true, true]);
    expect(await series('per-path', { host: 'Shop.Example.com', path: '/list?page=%39%39' }, 1)).toEqual([false]);
    expect(await series('per-path', { host: 'shop.example.com', path: '/list?page=1' }, 1)).toEqual([true]);
  });

  it('per region from a trusted header, and from the GEOIP_DB database by client address', async () => {
    expect(await series('per-region', { headers: { 'cf-ipcountry': 'xx' } }, 1)).toEqual([false]);
    expect(await series('per-region', { headers: { 'cf-ipcountry': 'GB' } }, 3)).toEqual([true, true, false]);
    // geo: no headers named in the action → AUTHZ_REGION_HEADERS (x-country-code), then the database.
    expect(await series('geo', { ip: '5.6.7.8' }, 1)).toEqual([false]);
    expect(await series('geo', { ip: '81.2.69.160' }, 2)).toEqual([true, false]);
    expect(await series('geo', { ip: '2a02:c7f:1::1' }, 1)).toEqual([false]); // GB too: same counter
    expect(await series('geo', { ip: '5.6.7.8', headers: { 'x-country-code': 'FR' } }, 2)).toEqual([true, true]);
    expect(await series('geo', { ip: '9.9.9.9' }, 2)).toEqual([true, true]); // not in the database: no descriptor
  });

  it('domain from AUTHZ_DOMAIN when the route sets none; an unknown domain is allowed untouched', async () => {
    const unknown = await check('nope', { ip: '10.0.0.1' });
    expect(allowed(unknown)).toBe(true);
    expect(unknown.ok_response?.response_headers_to_add).toEqual([]);
    expect(blocked(await client.check({ ip: '10.0.0.1' }))).toBe(false); // AUTHZ_DOMAIN unset here
  });
});
