/**
 * The gRPC port with a real Envoy as the peer (transport): 250 concurrent client requests multiplexed
 * by Envoy over its HTTP/2 connection, decided exactly; TLS and mutual TLS between Envoy and the service (an
 * Envoy without the client certificate is refused, so the check can fail); a Unix domain socket (`pipe`);
 * Envoy's gRPC health checking of the service's cluster. Envoy's rate-limit counters agree with the service's
 * after each part.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Settings } from '../../src/settings/settings.js';
import { rlsBootstrap, upstreamTls } from '../support/envoy-bootstrap.js';
import { setPath, type EnvoyAddress } from '../support/envoy-config.js';
import { envoyRlsCounts, serviceRlsCounts } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy, type EnvoyProcess } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { makeTestPki, type TestPki } from '../support/tls.js';
import { startTestService, type TestService } from '../support/service.js';

const RULES = { 'ops.yaml': 'domain: ops\ndescriptors:\n  - key: generic_key\n    value: burst\n    rate_limit: {unit: minute, requests_per_unit: 100}\n' };
const ROUTES = [
  { prefix: '/burst', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'burst' } }] }] },
  { prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'free' } }] }] },
];
const CLUSTER = 'static_resources.clusters[name=ratelimit]';

interface Stack {
  service: TestService;
  envoy: EnvoyProcess;
  port: number;
  close(): Promise<void>;
}

/** One GET through Envoy on its own connection; the status. */
function get(port: number, path: string, agent?: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: agent ?? false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describeEnvoy('Envoy as the gRPC peer', () => {
  let upstream: Upstream;
  let pki: TestPki;
  let dir: string;
  beforeAll(async () => {
    upstream = await startUpstream();
    pki = await makeTestPki();
    dir = mkdtempSync(join(tmpdir(), 'rl-envoy-ops-'));
  });
  afterAll(async () => {
    await upstream?.close();
    pki?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The service with `settings`, and Envoy reaching it at `address` with `cluster` fields set. */
  async function stack(settings: Partial<Settings>, address: (s: TestService) => EnvoyAddress, cluster: Record<string, unknown> = {}): Promise<Stack> {
    const service = await startTestService(RULES, settings);
    // A 10 s filter timeout and failure_mode_deny: on a loaded machine no answer is late, and a failed call
    // shows as a 500 instead of hiding in a fail-open 200.
    const filter = { timeout: '10s', failure_mode_deny: true };
    const config = rlsBootstrap({ service: address(service), upstream: { address: '127.0.0.1', port: upstream.port }, domain: 'ops', routes: ROUTES, filter });
    for (const [field, value] of Object.entries(cluster)) setPath(config, `${CLUSTER}.${field}`, value);
    const envoy = await startEnvoy(config).catch(async (err: unknown) => {
      await service.close();
      throw err;
    });
    return { service, envoy, port: await envoy.listenerPort('ingress'), close: async () => (await envoy.stop(), await service.close()) };
  }
  const tcp = (s: TestService): EnvoyAddress => ({ address: '127.0.0.1', port: s.service.grpcPort });

  /** Envoy's and the service's counts agree, and nothing failed open. */
  async function agree(s: Stack, ok: number, overLimit: number): Promise<void> {
    const envoy = await envoyRlsCounts(s.envoy, 'app');
    expect(envoy).toEqual({ ok, overLimit, error: 0, failureModeAllowed: 0 });
    expect(await serviceRlsCounts(s.service)).toEqual({ ok, overLimit, error: 0, failureModeAllowed: 0 });
  }

  it('decides 250 concurrent requests exactly, multiplexed over one HTTP/2 connection to the service', async () => {
    const s = await stack({}, tcp);
    try {
      expect(await get(s.port, '/warm')).toBe(200);
      const agent = new Agent({ keepAlive: true, maxSockets: 250 });
      const statuses = await Promise.all(Array.from({ length: 250 }, () => get(s.port, '/burst', agent)));
      agent.destroy();
      expect(statuses.filter((c) => c === 200)).toHaveLength(100);
      expect(statuses.filter((c) => c === 429)).toHaveLength(150);
      await agree(s, 101, 150);
      expect(await s.envoy.stat('cluster.ratelimit.upstream_cx_total')).toBe(1);
      expect(await s.envoy.stat('cluster.ratelimit.upstream_rq_total')).toBe(251);
    } finally {
      await s.close();
    }
  });

  const tls = (mutual: boolean) => ({ transport_socket: upstreamTls(pki, mutual) });

  it.each([
    ['TLS', false],
    ['mutual TLS', true],
  ])('speaks %s with the service', async (_name, mutual) => {
    const s = await stack({ grpcTlsCert: pki.serverCert, grpcTlsKey: pki.serverKey, ...(mutual ? { grpcTlsClientCa: pki.caCert } : {}) }, tcp, tls(mutual));
    try {
      const statuses = [];
      for (let i = 0; i < 102; i++) statuses.push(await get(s.port, '/burst'));
      expect(statuses.filter((c) => c === 429)).toHaveLength(2);
      await agree(s, 100, 2);
      expect(await s.envoy.stat('cluster.ratelimit.ssl.handshake')).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  it('is refused under mutual TLS without a client certificate (Envoy counts the error)', async () => {
    const s = await stack({ grpcTlsCert: pki.serverCert, grpcTlsKey: pki.serverKey, grpcTlsClientCa: pki.caCert }, tcp, tls(false));
    try {
      expect(await get(s.port, '/burst')).toBe(500); // failure_mode_deny
      const counts = await envoyRlsCounts(s.envoy, 'app');
      expect(counts.ok).toBe(0);
      expect(counts.error).toBeGreaterThan(0);
      expect(counts.failureModeAllowed).toBe(0);
      expect((await serviceRlsCounts(s.service)).ok).toBe(0);
    } finally {
      await s.close();
    }
  });

  it('answers over a Unix domain socket (an Envoy `pipe` address)', async () => {
    const path = join(dir, 'grpc.sock');
    const s = await stack({ grpcHost: `unix:${path}` }, () => ({ pipe: path }));
    try {
      const statuses = [];
      for (let i = 0; i < 101; i++) statuses.push(await get(s.port, '/burst'));
      expect(statuses.at(-1)).toBe(429);
      await agree(s, 100, 1);
    } finally {
      await s.close();
    }
  });

  it("is health-checked by Envoy's grpc_health_check and counted healthy", async () => {
    const s = await stack({}, tcp, {
      // no_traffic_interval: without traffic on the cluster Envoy checks only every 60 s by default
      health_checks: [{ timeout: '1s', interval: '0.2s', no_traffic_interval: '0.2s', unhealthy_threshold: 1, healthy_threshold: 1, grpc_health_check: {} }],
    });
    try {
      await eventually(async () => (await s.envoy.stat('cluster.ratelimit.health_check.success')) >= 3, {
        timeoutMs: 20_000,
        intervalMs: 100,
        what: 'three health checks',
      });
      expect(await s.envoy.stat('cluster.ratelimit.health_check.failure')).toBe(0);
      expect(await s.envoy.stat('cluster.ratelimit.membership_healthy')).toBe(1);
      expect(await get(s.port, '/burst')).toBe(200);
      await agree(s, 1, 0);
    } finally {
      await s.close();
    }
  });
});
