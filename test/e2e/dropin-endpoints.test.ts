/**
 * envoyproxy/ratelimit's endpoints and engine settings on the real servers (in-process, free ports):
 * /healthcheck (200 "OK" / 500), DEBUG_PORT's /rlconfig, USE_PROMETHEUS's listener, SHADOW_MODE,
 * LIMIT_RESPONSE_HEADERS_ENABLED with its header names, and the start-up notices about reference settings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/log.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { startService } from '../../src/app/start-service.js';
import { loadSettings } from '../../src/settings/settings.js';
import { eventually } from '../support/eventually.js';
import { freePort, startRedis, type RedisServer } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, testSettings, type TestService } from '../support/service.js';

const RULES = {
  'edge.yaml': `domain: edge
descriptors:
  - key: ip
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: user
    value: shady
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: open
    rate_limit: {unlimited: true}
`,
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(overrides: Parameters<typeof startTestService>[1]): Promise<{ t: TestService; client: RlsTestClient }> {
  const t = await startTestService(RULES, overrides);
  const client = new RlsTestClient(t.grpcAddress);
  cleanups.push(
    () => t.close(),
    () => client.close(),
  );
  return { t, client };
}

describe('/healthcheck on the HTTP port', () => {
  // "This replica can answer" (the Kubernetes readiness probe): with FAILURE_MODE=closed and Redis gone it still
  // answers (every limit rejects), so it stays 200 (a shared Redis outage must not take every replica out of the
  // Service); /readyz is the one that follows the store. It turns 500 while the replica drains on shutdown.
  it('is 200 "OK" while the replica can answer, also with the store down, and 500 while draining', async () => {
    const redis: RedisServer = await startRedis();
    cleanups.push(() => redis.stop());
    const { t } = await start({ backend: 'redis', redisUrl: redis.url, redisConnectTimeoutMs: 200, failureMode: 'closed', shutdownDrainMs: 3_000 });
    const probe = async (path = '/healthcheck') => {
      const res = await fetch(`${t.httpBase}${path}`);
      return { status: res.status, body: await res.text() };
    };
    await eventually(async () => (await probe('/readyz')).status === 200, { what: 'store healthy', timeoutMs: 10_000, intervalMs: 50 });
    expect(await probe()).toEqual({ status: 200, body: 'OK' });
    await redis.stopRedis();
    await eventually(async () => (await probe('/readyz')).status === 503, { what: 'store unhealthy', timeoutMs: 10_000, intervalMs: 50 });
    expect(await probe()).toEqual({ status: 200, body: 'OK' });
    await redis.restart();
    await eventually(async () => (await probe('/readyz')).status === 200, { what: 'store healthy again', timeoutMs: 10_000, intervalMs: 50 });
    const closing = t.close();
    await eventually(async () => (await probe()).status === 500, { what: 'draining', timeoutMs: 2_000, intervalMs: 50 });
    await closing;
  });
});

describe('DEBUG_PORT and USE_PROMETHEUS', () => {
  it('serves /rlconfig (the rules as text), /stats and /rules on DEBUG_PORT, and the metrics on PROMETHEUS_ADDR', async () => {
    const [debugPort, promPort] = [await freePort(), await freePort()];
    const { client } = await start({
      debugHost: '127.0.0.1',
      debugPort,
      usePrometheus: true,
      prometheusAddr: `127.0.0.1:${promPort}`,
      prometheusPath: '/prom',
    });
    await client.ask('edge', [[['ip', '10.0.0.1']]]);

    const rlconfig = await fetch(`http://127.0.0.1:${debugPort}/rlconfig`);
    expect(rlconfig.status).toBe(200);
    expect(await rlconfig.text()).toBe(
      // byte for byte what envoyproxy/ratelimit prints for these rules
      'edge.ip: unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false\n' +
        'edge.user_shady: unit=MINUTE requests_per_unit=1, shadow_mode: true, quota_mode: false\n' +
        'edge.open: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false\n',
    );
    expect(await (await fetch(`http://127.0.0.1:${debugPort}/stats`)).text()).toContain('ratelimit_hits_total{domain="edge",key="edge.ip"} 1');
    expect(((await (await fetch(`http://127.0.0.1:${debugPort}/rules`)).json()) as { domains: unknown[] }).domains).toHaveLength(1);
    expect((await fetch(`http://127.0.0.1:${debugPort}/nope`)).status).toBe(404);

    const prom = await fetch(`http://127.0.0.1:${promPort}/prom`);
    expect(prom.status).toBe(200);
    expect(await prom.text()).toContain('ratelimit_hits_total{domain="edge",key="edge.ip"} 1');
  });

  it('fails the start naming DEBUG_PORT when the port is taken', async () => {
    const { t } = await start({});
    const taken = Number(new URL(t.httpBase).port);
    const err = await startTestService(RULES, { debugHost: '127.0.0.1', debugPort: taken }).catch((e: unknown) => e);
    expect(String(err)).toContain(`cannot listen for DEBUG_PORT on 127.0.0.1:${taken}`);
  });
});

describe('SHADOW_MODE', () => {
  it('reports over-limit descriptors but never rejects; request-level overrides still do', async () => {
    const { client } = await start({ shadowMode: true });
    const codes: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await client.ask('edge', [[['ip', '10.0.0.2']]]);
      codes.push(`${r.overall_code}/${r.statuses[0]!.code}`);
    }
    expect(codes).toEqual(['OK/OK', 'OK/OK', 'OK/OK', 'OK/OK']);
    const override = { entries: [{ key: 'ip', value: '10.0.0.3' }], limit: { requests_per_unit: 1, unit: 'MINUTE' } };
    const first = await client.shouldRateLimit({ domain: 'edge', descriptors: [override] });
    const second = await client.shouldRateLimit({ domain: 'edge', descriptors: [override] });
    expect([first.overall_code, second.overall_code]).toEqual(['OK', 'OVER_LIMIT']);
  });
});

describe('LIMIT_RESPONSE_HEADERS_ENABLED', () => {
  it('adds the limit, remaining and reset of the tightest limit under the configured names', async () => {
    const { t, client } = await start({ limitResponseHeadersEnabled: true, limitLimitHeader: 'X-RateLimit-Limit', rateLimitHeaders: 'none' });
    t.clock.set(1_700_000_080_000); // 20 s before the minute ends
    const r = await client.ask('edge', [[['ip', '10.0.0.4']]]);
    expect(r.response_headers_to_add.map((h) => [h.key, h.value])).toEqual([
      ['X-RateLimit-Limit', '2'],
      ['RateLimit-Remaining', '1'],
      ['RateLimit-Reset', '20'],
    ]);
    const off = await start({});
    expect((await off.client.ask('edge', [[['ip', '10.0.0.4']]])).response_headers_to_add.map((h) => h.key)).not.toContain('RateLimit-Remaining');
  });
});

describe('start-up log', () => {
  it('names each reference setting that was set, with what it does here', async () => {
    const lines: string[] = [];
    const { settings, notices } = loadSettings({ REDIS_POOL_SIZE: '20', GOSTATS_FLUSH_INTERVAL_SECONDS: '5', RUNTIME_WATCH_ROOT: 'false' });
    const service = await startService(testSettings({ configDir: settings.configDir, grpcPort: 0, httpPort: 0, configWatch: false }), {
      log: createLogger({ level: 'info', format: 'json', write: (l) => lines.push(l) }),
      metrics: createMetrics({ defaultMetrics: false }),
      notices,
    }).catch((e: unknown) => e);
    if (!(service instanceof Error)) cleanups.push(() => (service as { close(): Promise<void> }).close());
    const logged = lines.map((l) => JSON.parse(l) as Record<string, string>).filter((l) => l.component === 'settings');
    expect(logged.map((l) => [l.level, l.setting])).toEqual([
      ['info', 'RUNTIME_WATCH_ROOT'],
      ['info', 'GOSTATS_FLUSH_INTERVAL_SECONDS'],
      ['info', 'REDIS_POOL_SIZE'],
    ]);
    expect(logged[2]!.msg).toMatch(/^REDIS_POOL_SIZE=20: already so here \(/);
  });
});
