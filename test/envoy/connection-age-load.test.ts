/**
 * Aging under load, through a real Envoy: requests keep coming while the service ages Envoy's connection every
 * second or so, over plain TCP and over TLS (Envoy Gateway's way: mutual TLS). Envoy always has calls on the wire
 * when a GOAWAY goes out; every one of them must still be decided, none refused, none left to Envoy's timeout.
 */
import { expect, onTestFinished } from 'vitest';
import { rlsBootstrap, upstreamTls } from '../support/envoy-bootstrap.js';
import { setPath } from '../support/envoy-config.js';
import { envoyRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { test as fixtures } from '../support/fixtures.js';
import { rawHttp } from '../support/http-raw.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { makeTestPki } from '../support/tls.js';

const RULES = 'domain: age\ndescriptors:\n  - key: generic_key\n    value: open\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n';
const LOAD_MS = 4500;
const CLIENTS = 6;
const CLUSTER = ['upstream_rq_timeout', 'upstream_rq_tx_reset', 'upstream_rq_rx_reset', 'upstream_cx_destroy_remote_with_active_rq'];

describeEnvoy('GRPC_MAX_CONNECTION_AGE under load through Envoy', () => {
  fixtures.for([
    ['plain TCP', false],
    ['mutual TLS', true],
  ] as const)('over %s: every request decided while the connection ages every second', { timeout: 90_000 }, async ([, secure], { rules }) => {
    const pki = secure ? await makeTestPki() : undefined;
    if (pki) onTestFinished(() => pki.remove());
    const service: ServiceProcess = await spawnService({
      CONFIG_DIR: rules.write({ 'age.yaml': RULES }),
      GRPC_MAX_CONNECTION_AGE: '1s',
      GRPC_MAX_CONNECTION_AGE_GRACE: '2s',
      ...(pki ? { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey, GRPC_TLS_CLIENT_CA: pki.caCert } : {}),
    });
    onTestFinished(() => service.stop());
    const upstream: Upstream = await startUpstream();
    onTestFinished(() => upstream.close());
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: Number(service.grpcAddress.split(':').pop()) },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: 'age',
      routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'open' } }] }] }],
      filter: { timeout: '2s' },
    });
    if (pki) setPath(config, 'static_resources.clusters[name=ratelimit].transport_socket', upstreamTls(pki, true));
    const envoy: EnvoyProcess = await startEnvoy(config);
    onTestFinished(() => envoy.stop());
    const port = await envoy.listenerPort('ingress');
    expect((await rawHttp(port, 'GET', '/')).status).toBe(200);

    const before = await envoy.stats('^cluster\\.ratelimit\\.upstream_');
    const end = performance.now() + LOAD_MS;
    const statuses = new Map<number, number>();
    let sent = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < end && sent < 100_000) {
          sent++;
          const status = (await rawHttp(port, 'GET', '/', {}, 5000).catch(() => ({ status: 0 }))).status;
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    const after = await envoy.stats('^cluster\\.ratelimit\\.upstream_');
    const delta = (name: string) => (after.get(`cluster.ratelimit.${name}`) ?? 0) - (before.get(`cluster.ratelimit.${name}`) ?? 0);
    expect(delta('upstream_cx_total'), 'connections aged and reopened').toBeGreaterThanOrEqual(3);
    expect(Object.fromEntries(CLUSTER.map((n) => [n, delta(n)]))).toEqual(Object.fromEntries(CLUSTER.map((n) => [n, 0])));
    const counts = await envoyRlsCounts(envoy, 'app');
    expect({ error: counts.error, failureModeAllowed: counts.failureModeAllowed }).toEqual({ error: 0, failureModeAllowed: 0 });
    expect(Object.fromEntries(statuses), `${sent} requests`).toEqual({ 200: sent });
  });
});
