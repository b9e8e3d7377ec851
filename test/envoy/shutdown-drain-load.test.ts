/**
 * Replicas stopped (SIGTERM) under load through a real Envoy, in a rolling restart of two as behind Envoy
 * Gateway: Envoy's `ratelimit` cluster has one endpoint, the Service, and no health check, so Envoy keeps sending
 * on its connection to the stopping replica until that replica's GOAWAY. The Service (a second Envoy, as
 * kube-proxy: test/support/service-proxy.ts) drops the replica from its endpoints as its /readyz fails, so
 * Envoy's next connection goes to the other replica. Envoy always has calls on the wire when the GOAWAY goes
 * out: every request must still be decided (no error, nothing failed open, no timeout or reset), over plain TCP
 * and over mutual TLS.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { rlsBootstrap, upstreamTls } from '../support/envoy-bootstrap.js';
import { setPath } from '../support/envoy-config.js';
import { envoyRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy } from '../support/envoy.js';
import { startUpstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { test as fixtures } from '../support/fixtures.js';
import { rawHttp } from '../support/http-raw.js';
import { freePort } from '../support/redis.js';
import { scrapeMetrics, total } from '../support/scrape.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { serviceProxy } from '../support/service-proxy.js';
import { makeTestPki } from '../support/tls.js';

const RULES = 'domain: stop\ndescriptors:\n  - key: generic_key\n    value: open\n    rate_limit: {unit: second, requests_per_unit: 1000000000}\n';
const DRAIN_MS = 1500;
const GRACE_MS = 3000;
const CLIENTS = 8;
/** Requests sent before each SIGTERM, and after the last restart. */
const BEFORE = 300;
const AFTER = 300;
const CLUSTER = [
  'upstream_rq_timeout',
  'upstream_rq_tx_reset',
  'upstream_rq_rx_reset',
  'upstream_cx_destroy_remote_with_active_rq',
  'upstream_cx_connect_fail',
];

/** Clients sending back to back until stop(); every status they saw (0: no answer). */
function load(port: number) {
  const statuses: number[] = [];
  let running = true;
  const loops = Array.from({ length: CLIENTS }, async () => {
    while (running && statuses.length < 200_000)
      statuses.push(
        await rawHttp(port, 'GET', '/', {}, 5000).then(
          (a) => a.status,
          () => 0,
        ),
      );
  });
  return {
    statuses,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return statuses;
    },
  };
}

describeEnvoy('SIGTERM of a replica under load through Envoy, no health check on the rate-limit cluster', () => {
  fixtures.for([
    ['plain TCP', false],
    ['mutual TLS', true],
  ] as const)('over %s: every request decided while each replica drains and exits in turn', { timeout: 120_000 }, async ([, secure]) => {
    const pki = secure ? await makeTestPki() : undefined;
    if (pki) onTestFinished(() => pki.remove());
    const dir = mkdtempSync(join(tmpdir(), 'rl-stop-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'stop.yaml'), RULES);
    const pods = [
      { grpcPort: await freePort(), httpPort: await freePort() },
      { grpcPort: await freePort(), httpPort: await freePort() },
    ];
    const replica = async (i: number): Promise<ServiceProcess> => {
      const r = await spawnService(
        {
          CONFIG_DIR: dir,
          GRPC_PORT: String(pods[i]!.grpcPort),
          HTTP_PORT: String(pods[i]!.httpPort),
          SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
          SHUTDOWN_GRACE_MS: String(GRACE_MS),
          ...(pki ? { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey, GRPC_TLS_CLIENT_CA: pki.caCert } : {}),
        },
        60_000,
      );
      onTestFinished(() => r.stop());
      return r;
    };
    const decisions = async (r: ServiceProcess) => total(await scrapeMetrics(r.httpAddress), 'ratelimit_decisions_total');

    // Envoy connects through the Service to A, the only replica; then B starts and becomes ready.
    const a = await replica(0);
    const upstream = await startUpstream();
    onTestFinished(() => upstream.close());
    const service = await startEnvoy(serviceProxy(pods));
    onTestFinished(() => service.stop());
    const ready = (n: number, timeoutMs: number, what: string) =>
      eventually(async () => (await service.stat('cluster.pods.membership_healthy')) === n, { timeoutMs, intervalMs: 20, what });
    await ready(1, 20_000, 'A ready at the Service');
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: await service.listenerPort('service') },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: 'stop',
      routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'open' } }] }] }],
    });
    if (pki) setPath(config, 'static_resources.clusters[name=ratelimit].transport_socket', upstreamTls(pki, true));
    const envoy = await startEnvoy(config);
    onTestFinished(() => envoy.stop());
    const port = await envoy.listenerPort('ingress');
    expect((await rawHttp(port, 'GET', '/')).status).toBe(200);
    const b = await replica(1);
    await ready(2, 20_000, 'B ready at the Service');

    // A rolling restart: A stops (Envoy's connection is on A), starts again, then B stops (Envoy's connection is on B).
    const replicas = [a, b];
    const traffic = load(port);
    onTestFinished(async () => void (await traffic.stop()));
    for (const i of [0, 1]) {
      const sent = traffic.statuses.length;
      await eventually(() => traffic.statuses.length >= sent + BEFORE, { timeoutMs: 30_000, what: `${BEFORE} requests before the SIGTERM` });
      const stopped = replicas[i]!.stop(); // SIGTERM: NOT_SERVING and /readyz 503 for the drain, then the GOAWAYs, then exit
      await ready(1, DRAIN_MS, `replica ${i} out of the Service within its drain`);
      await stopped;
      replicas[i] = await replica(i);
      await ready(2, 20_000, `replica ${i} ready again`);
    }
    const atEnd = traffic.statuses.length;
    await eventually(() => traffic.statuses.length >= atEnd + AFTER, { timeoutMs: 30_000, what: `${AFTER} requests after the restart` });
    const statuses = await traffic.stop();

    const stats = await envoy.stats('^cluster\\.ratelimit\\.upstream_');
    expect(stats.get('cluster.ratelimit.upstream_cx_close_notify'), 'each GOAWAY reached Envoy').toBeGreaterThanOrEqual(2);
    expect(Object.fromEntries(CLUSTER.map((n) => [n, stats.get(`cluster.ratelimit.${n}`) ?? 0]))).toEqual(Object.fromEntries(CLUSTER.map((n) => [n, 0])));
    const counts = await envoyRlsCounts(envoy, 'app');
    expect({ error: counts.error, failureModeAllowed: counts.failureModeAllowed }).toEqual({ error: 0, failureModeAllowed: 0 });
    expect(counts.ok).toBe(1 + statuses.length);
    expect(statuses.filter((s) => s !== 200).length, `${statuses.length} requests`).toBe(0);
    expect(await decisions(replicas[0]!), "the restarted A took the calls after B's GOAWAY").toBeGreaterThanOrEqual(AFTER);
  });
});
