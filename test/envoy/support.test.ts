/**
 * The Envoy test support itself: substitutions on shipped configs fail loudly when their target moved, stats
 * parse, a missing Envoy fails under CI=true, and a real Envoy starts on port 0, counts, and stops.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOverrides, getPath, httpFilterConfig, setPath, shippedEnvoyConfig } from '../support/envoy-config.js';
import { describeEnvoy, findEnvoy, parseStats, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';

const ROOT = join(import.meta.dirname, '../..');

describe('substitutions on a shipped config', () => {
  it('replaces only the addresses: admin and listeners on 127.0.0.1:0, named clusters on the given endpoint', () => {
    const doc = shippedEnvoyConfig(join(ROOT, 'envoy.yaml'), {
      clusters: { ratelimit: { address: '127.0.0.1', port: 1111 }, app: { pipe: '/tmp/app.sock' } },
      set: { 'static_resources.clusters[name=ratelimit].connect_timeout': '1s' },
    });
    expect(getPath(doc, 'admin.address')).toEqual({ socket_address: { address: '127.0.0.1', port_value: 0 } });
    expect(getPath(doc, 'static_resources.listeners[name=ingress].address.socket_address')).toEqual({ address: '127.0.0.1', port_value: 0 });
    expect(getPath(doc, 'static_resources.listeners[name=ready].address.socket_address.port_value')).toBe(0);
    expect(getPath(doc, 'static_resources.clusters[name=ratelimit].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address')).toEqual({
      socket_address: { address: '127.0.0.1', port_value: 1111 },
    });
    expect(getPath(doc, 'static_resources.clusters[name=app].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address')).toEqual({
      pipe: { path: '/tmp/app.sock' },
    });
    expect(getPath(doc, 'static_resources.clusters[name=ratelimit].connect_timeout')).toBe('1s');
    // everything else as written
    expect(httpFilterConfig(doc, 'ingress', 'envoy.filters.http.ratelimit')['domain']).toBe('edge');
  });

  it('fails naming the segment when a substitution has nothing to replace', () => {
    const doc = shippedEnvoyConfig(join(ROOT, 'envoy.yaml'));
    expect(() => applyOverrides(doc, { clusters: { nope: { address: '127.0.0.1', port: 1 } } })).toThrow('no element clusters[name=nope]');
    expect(() => setPath(doc, 'static_resources.listners[0].name', 'x')).toThrow('no field "listners"');
    expect(() => void getPath(doc, 'static_resources.listeners[7]')).toThrow('no element listeners[7]');
    const twoEndpoints = structuredClone(doc);
    const endpoints = getPath(twoEndpoints, 'static_resources.clusters[name=app].load_assignment.endpoints[0].lb_endpoints') as unknown[];
    endpoints.push(structuredClone(endpoints[0]));
    expect(() => applyOverrides(twoEndpoints, { clusters: { app: { address: '127.0.0.1', port: 1 } } })).toThrow('cluster app has 2 endpoints');
  });
});

describe('admin /stats parsing', () => {
  it('keeps counters and gauges, skips histograms', () => {
    const stats = parseStats('cluster.app.ratelimit.ok: 3\nhttp.ingress.rq_total: 10\ncluster.x.upstream_rq_time: P0(nan,1) P25(nan,2)\nserver.live: 1\n');
    expect([...stats]).toEqual([
      ['cluster.app.ratelimit.ok', 3],
      ['http.ingress.rq_total', 10],
      ['server.live', 1],
    ]);
  });
});

describe('finding Envoy', () => {
  it('throws under CI=true when Envoy is missing, and gives a reason otherwise', () => {
    const saved = { bin: process.env['ENVOY_BIN'], ci: process.env['CI'] };
    try {
      process.env['ENVOY_BIN'] = join(ROOT, 'no-such-envoy');
      process.env['CI'] = 'true';
      expect(() => findEnvoy()).toThrow(/CI=true and .*no-such-envoy/);
      process.env['CI'] = 'false';
      expect(findEnvoy()).toEqual({ reason: expect.stringContaining('no-such-envoy') as unknown });
    } finally {
      for (const [key, value] of [
        ['ENVOY_BIN', saved.bin],
        ['CI', saved.ci],
      ] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });
});

describeEnvoy('a real Envoy from the support module', () => {
  let envoy: EnvoyProcess;
  let upstream: Upstream;
  beforeAll(async () => {
    upstream = await startUpstream();
    const hcm = {
      '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
      stat_prefix: 'probe',
      route_config: { virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'app' } }] }] },
      http_filters: [{ name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } }],
    };
    envoy = await startEnvoy(
      applyOverrides(
        {
          admin: { address: {} },
          static_resources: {
            listeners: [
              { name: 'in', address: {}, filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: hcm }] }] },
            ],
            clusters: [
              { name: 'app', type: 'STATIC', load_assignment: { cluster_name: 'app', endpoints: [{ lb_endpoints: [{ endpoint: { address: {} } }] }] } },
            ],
          },
        },
        { clusters: { app: { address: '127.0.0.1', port: upstream.port } } },
      ),
    );
  });
  afterAll(async () => {
    await envoy.stop();
    await upstream.close();
  });

  it('proxies to the recording upstream and counts in admin /stats', async () => {
    const res = await fetch(`${await envoy.listenerUrl('in')}/hello?x=1`, { headers: { 'x-probe': 'yes' } });
    expect(res.status).toBe(200);
    expect(upstream.requests.at(-1)).toMatchObject({ method: 'GET', url: '/hello?x=1', headers: { 'x-probe': 'yes' } });
    expect(await envoy.stat('http.probe.downstream_rq_2xx')).toBe(1);
    expect((await envoy.stats('^cluster\\.app\\.upstream_rq_')).get('cluster.app.upstream_rq_200')).toBe(1);
  });

  it('reports a config Envoy refuses with its own message', async () => {
    await expect(startEnvoy({ static_resources: { clusters: [{ name: 'x', type: 'STATICK' }] } })).rejects.toThrow(
      /Envoy exited \(1\) while starting:[\s\S]*STATICK/,
    );
  });

  it('stops with SIGTERM', async () => {
    const other = await startEnvoy({ admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } } });
    await other.stop();
    expect(other.child.exitCode ?? other.child.signalCode).not.toBeNull();
  });
});
