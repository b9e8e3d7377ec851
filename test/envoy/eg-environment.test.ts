/**
 * This service started as Envoy Gateway starts its rate-limit container: the whole environment of
 * envoyproxy/gateway v1.9.0 (test/support/eg-environment.ts: resource.go's expectedRateLimitContainerEnv, with
 * Redis and its rate-limit Prometheus telemetry on: USE_PROMETHEUS=true, PROMETHEUS_ADDR=:PORT,
 * PROMETHEUS_MAPPER_YAML naming its statsd_conf.yaml, test/fixtures/eg-environment/), rules over xDS from a go-control-plane server over mutual
 * TLS, gRPC over TLS from a real Envoy. It starts, serves its metrics on the Prometheus address, and decides
 * through Envoy.
 *
 * What differs from the pod, and why: files live in a temporary directory instead of /certs, /data and
 * /etc/statsd-exporter; addresses are this host's free ports (the xDS server, Redis, the Prometheus port in
 * PROMETHEUS_ADDR's `:PORT` form, and GRPC_PORT / PORT, which Envoy Gateway leaves at 8081 / 8080); the test
 * certificates name `redis.test`, so CONFIG_GRPC_XDS_SERVER_TLS_SAN says so (Envoy Gateway's certificate names the
 * host of its URL, envoy-gateway); the gRPC certificate and the xDS client certificate are the test PKI's server
 * and client certificates (Envoy Gateway mounts one certificate for both).
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap, upstreamTls } from '../support/envoy-bootstrap.js';
import { setPath } from '../support/envoy-config.js';
import { envoyRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { freePort, startRedis, type RedisServer } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { makeTestPki, type TestPki } from '../support/tls.js';
import { EG_VERSION, egEnvironment } from '../support/eg-environment.js';
import { startXdsServer, type XdsServer } from '../support/xds-server.js';

const NODE = 'envoy-ratelimit';
const DOMAIN = 'default/eg/http';
const MAPPER = join(import.meta.dirname, '../fixtures/eg-environment/statsd_conf.yaml');
const policy = { name: 'httproute/default/backend/rule/0', domain: DOMAIN, descriptors: [{ key: 'client', rateLimit: { unit: 'HOUR', requestsPerUnit: 2 } }] };

let root = '';
let pki: TestPki;
let xds: XdsServer;
let redis: RedisServer;
let service: ServiceProcess;
let upstream: Upstream;
let envoy: EnvoyProcess;
let prometheusPort = 0;

describeEnvoy(`Envoy Gateway's rate-limit environment (${EG_VERSION}), whole`, () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'rl-eg-'));
    pki = await makeTestPki();
    for (const d of ['certs', 'data/ratelimit/config', 'etc/statsd-exporter']) mkdirSync(join(root, d), { recursive: true });
    copyFileSync(pki.serverCert, join(root, 'certs/tls.crt'));
    copyFileSync(pki.serverKey, join(root, 'certs/tls.key'));
    copyFileSync(pki.clientCert, join(root, 'certs/client.crt'));
    copyFileSync(pki.clientKey, join(root, 'certs/client.key'));
    copyFileSync(pki.caCert, join(root, 'certs/ca.crt'));
    copyFileSync(MAPPER, join(root, 'etc/statsd-exporter/conf.yaml'));
    const xdsPort = await freePort();
    xds = await startXdsServer({
      port: xdsPort,
      node: NODE,
      snapshot: { version: '1', resources: [policy] },
      tls: { cert: pki.serverCert, key: pki.serverKey, ca: pki.caCert },
    });
    redis = await startRedis();
    prometheusPort = await freePort();
    service = await spawnService(
      {
        ...egEnvironment({ root, xds: `127.0.0.1:${xdsPort}`, redis: `127.0.0.1:${redis.port}`, prometheusAddr: `:${prometheusPort}` }),
        CONFIG_GRPC_XDS_CLIENT_TLS_CERT: join(root, 'certs/client.crt'),
        CONFIG_GRPC_XDS_CLIENT_TLS_KEY: join(root, 'certs/client.key'),
        CONFIG_GRPC_XDS_SERVER_TLS_SAN: pki.serverName,
      },
      60_000,
    );
    upstream = await startUpstream();
    const [, grpcPort] = service.grpcAddress.split(':') as [string, string];
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: Number(grpcPort) },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: DOMAIN,
      routes: [{ prefix: '/', rateLimits: [{ actions: [{ request_headers: { header_name: 'x-client', descriptor_key: 'client' } }] }] }],
    });
    // Envoy Gateway's ratelimit_cluster speaks TLS to the service, trusting its CA.
    setPath(config, 'static_resources.clusters[name=ratelimit].transport_socket', upstreamTls(pki));
    envoy = await startEnvoy(config);
  }, 120_000);

  afterAll(async () => {
    await envoy?.stop();
    await upstream?.close();
    await service?.stop();
    await redis?.stop();
    await xds?.close();
    pki?.remove();
    if (root !== '') rmSync(root, { recursive: true, force: true });
  });

  it('starts, takes the rules over mutual TLS, decides through Envoy over TLS, and serves its metrics on PROMETHEUS_ADDR', { timeout: 60_000 }, async () => {
    await xds.waitFor((e) => e.event === 'request' && e.version === '1' && e.nonce !== '', { timeoutMs: 20_000, what: 'the ACK of the rules' });
    const url = await envoy.listenerUrl('ingress');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${url}/`, { headers: { 'x-client': 'a' } })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const counts = await envoyRlsCounts(envoy, 'app');
    expect(counts).toMatchObject({ ok: 2, overLimit: 1, error: 0, failureModeAllowed: 0 });

    const metrics = await fetch(`http://127.0.0.1:${prometheusPort}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^# (HELP|TYPE) /m);
    expect(service.stderr()).not.toMatch(/"level":"error"/);
  });
});
