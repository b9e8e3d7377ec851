/**
 * Operations with a real Envoy as the peer: a rolling restart of two service processes under steady
 * traffic (SIGTERM → drain, NOT_SERVING seen by Envoy's gRPC health checks → exit → a new process on the same
 * port) with no 5xx and nothing let through by Envoy's failure mode; and Redis killed under traffic, answered as
 * docs/redis.md says whatever Envoy's failure_mode_deny: FAILURE_MODE=open admits, closed rejects with 429,
 * both in time, so Envoy counts no error.
 */
import { join } from 'node:path';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { setPath } from '../support/envoy-config.js';
import { envoyRlsCounts, startEnvoyStack } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { rawHttp } from '../support/http-raw.js';
import { scrapeMetrics, total } from '../support/scrape.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const RULES =
  'domain: ops\ndescriptors:\n  - key: generic_key\n    value: steady\n    rate_limit: {unit: second, requests_per_unit: 1000000}\n  - key: generic_key\n    value: tight\n    rate_limit: {unit: hour, requests_per_unit: 5}\n';
const ROUTES = [
  { prefix: '/tight', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'tight' } }] }] },
  { prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'steady' } }] }] },
];

/** Clients sending requests back to back until `stop()`; every status they saw. */
function steadyTraffic(port: number, clients: number): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  let running = true;
  const loops = Array.from({ length: clients }, async () => {
    // a refused or reset connection counts as status 0 (a failure the test reports)
    while (running && statuses.length < 100_000)
      statuses.push(
        await rawHttp(port, 'GET', '/steady').then(
          (a) => a.status,
          () => 0,
        ),
      );
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return statuses;
    },
  };
}

describeEnvoy('operations with Envoy as the peer', () => {
  let upstream: Upstream;
  let dir: string;
  beforeAll(async () => {
    upstream = await startUpstream();
    dir = mkdtempSync(join(tmpdir(), 'rl-envoy-restart-'));
    writeFileSync(join(dir, 'ops.yaml'), RULES);
  });
  afterAll(async () => {
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('restarts two service processes one at a time under traffic: no 5xx, nothing failed open', async () => {
    const ports = [await freePort(), await freePort()];
    const env = (port: number) => ({ CONFIG_DIR: dir, GRPC_PORT: String(port), SHUTDOWN_DRAIN_MS: '1500', SHUTDOWN_GRACE_MS: '2000' });
    const services: ServiceProcess[] = [];
    // 60 s to start: four processes start in this test, on a machine that may be loaded
    for (const p of ports) services.push(await spawnService(env(p), 60_000));
    const config = rlsBootstrap({
      service: { address: '127.0.0.1', port: ports[0]! },
      upstream: { address: '127.0.0.1', port: upstream.port },
      domain: 'ops',
      routes: ROUTES,
    });
    const cluster = 'static_resources.clusters[name=ratelimit]';
    setPath(
      config,
      `${cluster}.load_assignment.endpoints[0].lb_endpoints`,
      ports.map((port) => ({ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } })),
    );
    // A draining replica says NOT_SERVING: checked every 100 ms, one failure takes it out; no panic routing.
    setPath(config, `${cluster}.health_checks`, [
      { timeout: '0.5s', interval: '0.1s', no_traffic_interval: '0.1s', unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {} },
    ]);
    setPath(config, `${cluster}.common_lb_config`, { healthy_panic_threshold: { value: 0 } });
    let envoy: EnvoyProcess | undefined;
    let traffic: { stop(): Promise<number[]> } | undefined;
    try {
      envoy = await startEnvoy(config);
      const e = envoy;
      const port = await e.listenerPort('ingress');
      const healthy = (n: number) =>
        eventually(async () => (await e.stat('cluster.ratelimit.membership_healthy')) === n, {
          timeoutMs: 20_000,
          intervalMs: 50,
          what: `${n} healthy replicas`,
        });
      await healthy(2);
      traffic = steadyTraffic(port, 4);
      for (const i of [0, 1]) {
        const stopped = services[i]!.stop(); // SIGTERM: NOT_SERVING for the drain, then exit
        await healthy(1);
        await stopped;
        services[i] = await spawnService(env(ports[i]!), 60_000);
        await healthy(2);
      }
      const statuses = await traffic.stop();
      traffic = undefined;
      expect(statuses.length).toBeGreaterThan(50);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      const counts = await envoyRlsCounts(e, 'app');
      expect(counts).toEqual({ ok: statuses.length, overLimit: 0, error: 0, failureModeAllowed: 0 });
      expect(await e.stat('cluster.ratelimit.upstream_rq_5xx')).toBe(0);
    } finally {
      await traffic?.stop();
      await envoy?.stop();
      await Promise.all(services.map((s) => s.stop()));
    }
  }, 120_000);

  it.each([
    ['open', true, 200],
    ['open', false, 200],
    ['closed', true, 429],
    ['closed', false, 429],
  ] as const)('answers by FAILURE_MODE=%s when Redis is killed (Envoy failure_mode_deny %s): %i, in time', async (mode, deny, status) => {
    const stack = await startEnvoyStack({
      rules: { 'ops.yaml': RULES },
      backend: 'redis',
      settings: { failureMode: mode },
      config: ({ service, upstream: app }) => rlsBootstrap({ service, upstream: app, domain: 'ops', routes: ROUTES, filter: { failure_mode_deny: deny } }),
    });
    try {
      const port = Number(new URL(stack.url).port);
      expect((await rawHttp(port, 'GET', '/tight')).status).toBe(200);
      await stack.redis!.stopRedis();
      const answers = [];
      for (let i = 0; i < 10; i++) answers.push(await rawHttp(port, 'GET', '/tight'));
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => status));
      if (status === 429) for (const a of answers) expect(Number(a.headers['retry-after'])).toBeGreaterThan(0);
      const counts = await envoyRlsCounts(stack.envoy, 'app');
      expect(counts).toEqual({ ok: status === 200 ? 11 : 1, overLimit: status === 429 ? 10 : 0, error: 0, failureModeAllowed: 0 });
      const metrics = await scrapeMetrics(stack.service.httpBase.replace('http://', ''));
      expect(total(metrics, 'ratelimit_store_fallbacks_total')).toBe(10);
    } finally {
      await stack.close();
    }
  });
});
