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
 * the age of B's start, and B has calls by the second reconnect.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { envoyRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { rawHttp } from '../support/http-raw.js';
import { freePort } from '../support/redis.js';
import { scrapeMetrics, total } from '../support/scrape.js';
import { serviceProxy } from '../support/service-proxy.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const AGE_MS = 2000;
const RULES = ['domain: age', 'descriptors:', '  - key: generic_key', '    value: open', '    rate_limit: {unit: second, requests_per_unit: 1000000}', ''].join(
  '\n',
);

let dir = '';
let upstream: Upstream;
let service: EnvoyProcess;
let envoy: EnvoyProcess;
let ingress = 0;
const ports: number[] = [];
const replicas: ServiceProcess[] = [];

const replica = (i: number) =>
  spawnService(
    {
      CONFIG_DIR: dir,
      GRPC_PORT: String(ports[i]),
      GRPC_MAX_CONNECTION_AGE: `${AGE_MS}ms`,
      GRPC_MAX_CONNECTION_AGE_GRACE: '5s',
    },
    60_000,
  );
const decisions = async (r: ServiceProcess) => total(await scrapeMetrics(r.httpAddress), 'ratelimit_decisions_total');

describeEnvoy('GRPC_MAX_CONNECTION_AGE: an Envoy connected to one replica reaches a replica added later', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-age-'));
    writeFileSync(join(dir, 'age.yaml'), RULES);
    ports.push(await freePort(), await freePort());
    replicas.push(await replica(0));
    upstream = await startUpstream();
    service = await startEnvoy(serviceProxy(ports.map((grpcPort) => ({ grpcPort }))));
    const servicePort = await service.listenerPort('service');
    envoy = await startEnvoy(
      rlsBootstrap({
        service: { address: '127.0.0.1', port: servicePort },
        upstream: { address: '127.0.0.1', port: upstream.port },
        domain: 'age',
        routes: [{ prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'open' } }] }] }],
      }),
    );
    ingress = await envoy.listenerPort('ingress');
  }, 120_000);

  afterAll(async () => {
    await envoy?.stop();
    await service?.stop();
    for (const r of replicas) await r.stop();
    await upstream?.close();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('moves part of the calls to replica B within the age, every request decided', { timeout: 90_000 }, async () => {
    // Envoy connects through the Service to A, the only replica
    for (let i = 0; i < 20; i++) expect((await rawHttp(ingress, 'GET', '/')).status).toBe(200);
    expect(await decisions(replicas[0]!)).toBeGreaterThanOrEqual(20);

    replicas.push(await replica(1));
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
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      if (reconnectedAfterMs === undefined && (await envoy.stat('cluster.ratelimit.upstream_cx_total')) > connections)
        reconnectedAfterMs = performance.now() - readyB;
      onB = await decisions(replicas[1]!);
      if (onB >= 5) break;
    }
    const movedAfterMs = performance.now() - readyB;
    expect(reconnectedAfterMs, 'Envoy reconnected within the age (+10%) and 3 s').toBeLessThanOrEqual(AGE_MS * 1.1 + 3000);
    expect(onB, `replica B decided ${onB} of ${sent} calls in ${Math.round(movedAfterMs)} ms`).toBeGreaterThanOrEqual(5);
    expect(await decisions(replicas[0]!)).toBeGreaterThan(20); // A kept part of them
    const counts = await envoyRlsCounts(envoy, 'app');
    expect(counts.error).toBe(0);
    expect(counts.failureModeAllowed).toBe(0);
    expect(counts.ok).toBe(20 + sent);
  });
});
