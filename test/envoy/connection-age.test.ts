/**
 * A scale-out reaches the Envoys already connected: with GRPC_MAX_CONNECTION_AGE, an Envoy whose one HTTP/2
 * connection to the rate-limit Service lands on replica A moves part of its calls to replica B, started later,
 * within the age; and no request goes undecided meanwhile (Envoy counts no rate-limit error and no fail-open).
 *
 * As in Kubernetes: Envoy's `ratelimit` cluster (shaped like Envoy Gateway's, test/support/envoy-bootstrap.ts)
 * has one endpoint, the Service address; the Service spreads *connections* over the replicas that are ready, as
 * kube-proxy does. Here a second Envoy plays the Service (test/support/service-proxy.ts), with a TCP readiness
 * check: B is listed from the start but gets connections only once it listens. Without aging, Envoy keeps its
 * connection to A for as long as both live, and B never sees a call. With it, Envoy's connection is aged within
 * the age of B's start, and B has calls by the second reconnect. Over plain TCP and over mutual TLS, as Envoy
 * Gateway's ratelimit cluster connects.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it, onTestFinished } from 'vitest';
import { rlsBootstrap, upstreamTls } from '../support/envoy-bootstrap.js';
import { setPath } from '../support/envoy-config.js';
import { envoyRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { rawHttp } from '../support/http-raw.js';
import { freePort } from '../support/redis.js';
import { scrapeMetrics, total } from '../support/scrape.js';
import { serviceProxy } from '../support/service-proxy.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { makeTestPki } from '../support/tls.js';

const AGE_MS = 2000;
const RULES = ['domain: age', 'descriptors:', '  - key: generic_key', '    value: open', '    rate_limit: {unit: second, requests_per_unit: 1000000}', ''].join(
  '\n',
);

const decisions = async (r: ServiceProcess) => total(await scrapeMetrics(r.httpAddress), 'ratelimit_decisions_total');

describeEnvoy('GRPC_MAX_CONNECTION_AGE: an Envoy connected to one replica reaches a replica added later', () => {
  it.for([
    ['plain TCP', false],
    ['mutual TLS, as Envoy Gateway connects', true],
  ] as const)('over %s: moves part of the calls to replica B within the age, every request decided', { timeout: 90_000 }, async ([, secure]) => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-age-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'age.yaml'), RULES);
    const pki = secure ? await makeTestPki() : undefined;
    if (pki) onTestFinished(() => pki.remove());
    const ports = [await freePort(), await freePort()];
    const replica = async (i: number) => {
      const r = await spawnService(
        {
          CONFIG_DIR: dir,
          GRPC_PORT: String(ports[i]),
          GRPC_MAX_CONNECTION_AGE: `${AGE_MS}ms`,
          GRPC_MAX_CONNECTION_AGE_GRACE: '5s',
          ...(pki ? { GRPC_TLS_CERT: pki.serverCert, GRPC_TLS_KEY: pki.serverKey, GRPC_TLS_CLIENT_CA: pki.caCert } : {}),
        },
        60_000,
      );
      onTestFinished(() => r.stop());
      return r;
    };
    const a = await replica(0);
    const upstream: Upstream = await startUpstream();
    onTestFinished(() => upstream.close());
    const service: EnvoyProcess = await startEnvoy(serviceProxy(ports.map((grpcPort) => ({ grpcPort }))));
    onTestFinished(() => service.stop());
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: await service.listenerPort('service') },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: 'age',
      routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'open' } }] }] }],
    });
    if (pki) setPath(config, 'static_resources.clusters[name=ratelimit].transport_socket', upstreamTls(pki, true));
    const envoy: EnvoyProcess = await startEnvoy(config);
    onTestFinished(() => envoy.stop());
    const ingress = await envoy.listenerPort('ingress');

    // Envoy connects through the Service to A, the only replica
    for (let i = 0; i < 20; i++) expect((await rawHttp(ingress, 'GET', '/')).status).toBe(200);
    expect(await decisions(a)).toBeGreaterThanOrEqual(20);

    const b = await replica(1);
    // the Service takes B once its readiness check passes
    await eventually(async () => (await service.stat('cluster.pods.membership_healthy')) === 2, { timeoutMs: 20_000, what: 'B ready at the Service' });
    const readyB = performance.now();
    const connections = await envoy.stat('cluster.ratelimit.upstream_cx_total');
    let reconnectedAfterMs: number | undefined;
    let onB = 0;
    let sent = 0;
    // Every connection is aged within 1.1 × the age of its opening, and the Service gives each new connection to
    // the next ready replica in turn: B gets one at the first or the second reconnect. 3 s of slack per reconnect
    // for a loaded machine.
    while (performance.now() - readyB < 2 * (AGE_MS * 1.1 + 3000) && sent < 10_000) {
      const answers = await Promise.all(Array.from({ length: 5 }, () => rawHttp(ingress, 'GET', '/')));
      sent += answers.length;
      expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200, 200]);
      if (reconnectedAfterMs === undefined && (await envoy.stat('cluster.ratelimit.upstream_cx_total')) > connections)
        reconnectedAfterMs = performance.now() - readyB;
      onB = await decisions(b);
      if (onB >= 5) break;
    }
    const movedAfterMs = performance.now() - readyB;
    expect(reconnectedAfterMs, 'Envoy reconnected within the age (+10%) and 3 s').toBeLessThanOrEqual(AGE_MS * 1.1 + 3000);
    expect(onB, `replica B decided ${onB} of ${sent} calls in ${Math.round(movedAfterMs)} ms`).toBeGreaterThanOrEqual(5);
    expect(await decisions(a)).toBeGreaterThan(20); // A kept part of them
    const counts = await envoyRlsCounts(envoy, 'app');
    expect(counts.error).toBe(0);
    expect(counts.failureModeAllowed).toBe(0);
    expect(counts.ok).toBe(20 + sent);
  });
});
