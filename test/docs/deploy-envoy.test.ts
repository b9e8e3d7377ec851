/**
 * envoy.yaml (and its copy in deploy/k8s/base) checked against Envoy's API protos (published in the npm package
 * @grpc/grpc-js-xds), plus the facts the sidecar relies on: admin on loopback, HTTP/2 to the sidecar, the
 * domain the rules declare, and descriptors built only from identity Envoy establishes.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any -- walks parsed YAML whose shape the proto check above asserts */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { EnvoyProtos } from '../support/envoy-protos.js';

const ROOT = join(import.meta.dirname, '../..');
const BOOTSTRAP = 'envoy.config.bootstrap.v3.Bootstrap';
type Obj = Record<string, any>;

let protos: EnvoyProtos;
let envoy: Obj;
beforeAll(() => {
  protos = new EnvoyProtos();
  envoy = parse(readFileSync(join(ROOT, 'envoy.yaml'), 'utf8')) as Obj;
});

const clone = (o: Obj): Obj => structuredClone(o);
const ingress = (e: Obj): Obj => e.static_resources.listeners.find((l: Obj) => l.name === 'ingress').filter_chains[0].filters[0].typed_config;
const cluster = (e: Obj, name: string): Obj => e.static_resources.clusters.find((c: Obj) => c.name === name);

describe('envoy.yaml against the Envoy API protos', () => {
  it('is a valid v3 Bootstrap: every field, @type, enum and duration as the protos declare them, nothing deprecated', () => {
    expect(protos.check(BOOTSTRAP, envoy)).toEqual([]);
  });

  it('catches what Envoy would reject (so the check above can fail)', () => {
    const typo = clone(envoy);
    ingress(typo).http_filters.find((f: Obj) => f.name === 'envoy.filters.http.ratelimit').typed_config.failure_mode_denied = false;
    expect(protos.check(BOOTSTRAP, typo)).toEqual([
      expect.stringContaining("no field 'failure_mode_denied' in envoy.extensions.filters.http.ratelimit.v3.RateLimit"),
    ]);

    const wrongType = clone(envoy);
    ingress(wrongType).http_filters[0].typed_config['@type'] = 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.NoSuchFilter';
    expect(protos.check(BOOTSTRAP, wrongType)).toEqual([expect.stringContaining('unknown @type')]);

    const deprecated = clone(envoy);
    cluster(deprecated, 'ratelimit').http2_protocol_options = {};
    expect(protos.check(BOOTSTRAP, deprecated)).toEqual([expect.stringContaining('Cluster.http2_protocol_options is deprecated')]);

    const badValues = clone(envoy);
    cluster(badValues, 'ratelimit').connect_timeout = '250ms';
    cluster(badValues, 'ratelimit').type = 'STATICK';
    ingress(badValues).route_config.virtual_hosts[0].routes[0].match = {};
    expect(protos.check(BOOTSTRAP, badValues)).toEqual([
      expect.stringContaining('one of prefix | path | safe_regex'),
      expect.stringContaining("'STATICK' is not one of"),
      expect.stringContaining('connect_timeout: expected a duration'),
    ]);
  });

  it('keeps the admin API on loopback and probes Envoy through a separate ready listener', () => {
    expect(envoy.admin.address.socket_address.address).toBe('127.0.0.1');
    const ready = envoy.static_resources.listeners.find((l: Obj) => l.name === 'ready');
    expect(ready.address.socket_address.port_value).toBe(9902);
    const hcm = ready.filter_chains[0].filters[0].typed_config;
    expect(hcm.http_filters[0].typed_config).toMatchObject({ pass_through_mode: false, headers: [{ name: ':path', string_match: { exact: '/ready' } }] });
  });

  it('talks HTTP/2 to the sidecar on loopback, sends domain "edge", and puts the router last', () => {
    const rl = cluster(envoy, 'ratelimit');
    expect(rl.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].explicit_http_config).toHaveProperty(
      'http2_protocol_options',
    );
    // No cap on the calls a connection carries: the service needs none (docs/envoy.md), as Envoy Gateway's has none.
    expect(JSON.stringify(rl)).not.toContain('max_requests_per_connection');
    expect(rl.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 8081 });
    const filters = ingress(envoy).http_filters as Obj[];
    expect(filters.find((f) => f.name === 'envoy.filters.http.ratelimit')!.typed_config.domain).toBe('edge');
    expect(filters.at(-1)!.name).toBe('envoy.filters.http.router');
  });

  it('builds descriptors only from identity Envoy establishes: the TCP peer, or headers it strips and then sets from a verified token', () => {
    const hcm = ingress(envoy);
    expect(hcm.use_remote_address).toBe(true);
    expect(hcm.xff_num_trusted_hops ?? 0).toBe(0);
    const filters = hcm.http_filters as Obj[];
    const names = filters.map((f) => f.name);
    const strip = filters[names.indexOf('envoy.filters.http.header_mutation')]!.typed_config.mutations.request_mutations.map((m: Obj) => m.remove);
    const jwt = filters[names.indexOf('envoy.filters.http.jwt_authn')]!.typed_config;
    const fromToken = Object.values(jwt.providers as Obj).flatMap((p: Obj) => (p.claim_to_headers as Obj[]).map((c) => c.header_name));
    // Order: strip, then authenticate, then rate limit.
    expect(names.indexOf('envoy.filters.http.header_mutation')).toBeLessThan(names.indexOf('envoy.filters.http.jwt_authn'));
    expect(names.indexOf('envoy.filters.http.jwt_authn')).toBeLessThan(names.indexOf('envoy.filters.http.ratelimit'));

    const vhost = hcm.route_config.virtual_hosts[0];
    const allRateLimits: Obj[] = [...(vhost.rate_limits ?? []), ...vhost.routes.flatMap((r: Obj) => r.route?.rate_limits ?? [])];
    const headers = allRateLimits.flatMap((rl) => (rl.actions as Obj[]).filter((a) => a.request_headers).map((a) => a.request_headers.header_name as string));
    expect(headers.length).toBeGreaterThan(0);
    for (const h of headers) {
      expect(strip, `${h} is removed from the client's request`).toContain(h);
      expect(fromToken, `${h} is set from a verified claim`).toContain(h);
    }
    // Routes whose descriptors use those headers require a token.
    const required = (jwt.rules as Obj[]).filter((r) => r.requires).map((r) => r.match.prefix as string);
    for (const r of vhost.routes as Obj[]) {
      const usesHeaders = (r.route?.rate_limits ?? []).some((rl: Obj) => (rl.actions as Obj[]).some((a) => a.request_headers));
      if (usesHeaders) expect(required).toContain(r.match.prefix);
    }
  });
});
