/**
 * Two of the reference's switches, on real processes: DISABLE_STATS=true sends and serves none of the reference's
 * stats (statsd, PROMETHEUS_ADDR, the ratelimit_service_* series) where the same service without it does; with
 * REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true, GET /healthcheck follows Redis down and back up, where without it
 * /healthcheck stays 200.
 */
import { createSocket, type Socket } from 'node:dgram';
import { connect } from 'node:net';
import { expect, onTestFinished } from 'vitest';
import { eventually } from '../support/eventually.js';
import { test } from '../support/fixtures.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const RULES = { 'd.yaml': 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n' };

async function udpListener(): Promise<{ socket: Socket; port: number; packets: string[] }> {
  const socket = createSocket('udp4');
  const packets: string[] = [];
  socket.on('message', (m) => packets.push(m.toString()));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  onTestFinished(() => void socket.close());
  return { socket, port: socket.address().port, packets };
}

async function start(env: Record<string, string>): Promise<ServiceProcess> {
  const service = await spawnService(env);
  onTestFinished(() => service.stop());
  return service;
}

const metricsText = async (s: ServiceProcess) => (await fetch(`http://${s.httpAddress}/metrics`)).text();
const healthcheck = async (s: ServiceProcess) => (await fetch(`http://${s.httpAddress}/healthcheck`)).status;
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

test('DISABLE_STATS=true: no statsd, no PROMETHEUS_ADDR, no ratelimit_service_* series; our own series stay', { timeout: 60_000 }, async ({ rules }) => {
  const dir = rules.write(RULES);
  const sides = await Promise.all(
    [false, true].map(async (disabled) => {
      const udp = await udpListener();
      const promPort = await freePort();
      const env = {
        CONFIG_DIR: dir,
        USE_STATSD: 'true',
        STATSD_PROTOCOL: 'udp',
        STATSD_PORT: String(udp.port),
        STATSD_HOST: '127.0.0.1',
        STATS_FLUSH_INTERVAL: '100ms',
        USE_PROMETHEUS: 'true',
        PROMETHEUS_ADDR: `127.0.0.1:${promPort}`,
        ...(disabled ? { DISABLE_STATS: 'true' } : {}),
      };
      const service = await start(env);
      const client = new RlsTestClient(service.grpcAddress);
      onTestFinished(() => client.close());
      for (let i = 0; i < 3; i++) expect((await client.ask('d', [[['k', 'v']]])).overall_code).toBe('OK');
      return { service, udp, promPort };
    }),
  );
  const [on, off] = sides as [(typeof sides)[0], (typeof sides)[0]];
  // the service with stats sends its first flush within a few intervals: by then the other would have sent too
  await eventually(() => on.udp.packets.some((p) => p.includes('ratelimit.service.rate_limit.d.k.total_hits')), { timeoutMs: 10_000, what: 'a statsd flush' });
  await eventually(async () => (await metricsText(on.service)).includes('ratelimit_service_rate_limit_total_hits'), { timeoutMs: 5000 });
  expect(await listening(on.promPort)).toBe(true);

  expect(off.udp.packets).toEqual([]);
  expect(await listening(off.promPort)).toBe(false);
  const text = await metricsText(off.service);
  expect(text).not.toContain('ratelimit_service_');
  expect(text).toMatch(/^ratelimit_decisions_total\{.*\} 3$/m);
});

test.for([true, false])(
  'REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=%s: GET /healthcheck follows Redis down and back only when true',
  { timeout: 90_000 },
  async (follows, { redis, rules }) => {
    const service = await start({
      CONFIG_DIR: rules.write(RULES),
      BACKEND: 'redis',
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      ...(follows ? { REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: 'true' } : {}),
    });
    await eventually(async () => (await healthcheck(service)) === 200, { timeoutMs: 10_000, what: '/healthcheck 200 with Redis up' });
    await redis.stopRedis();
    try {
      // /readyz follows Redis in every case: once it says so, /healthcheck has had its chance to follow
      await eventually(async () => (await fetch(`http://${service.httpAddress}/readyz`)).status === 503, { timeoutMs: 30_000, what: '/readyz 503' });
      expect(await healthcheck(service)).toBe(follows ? 500 : 200);
    } finally {
      await redis.restart();
    }
    await eventually(async () => (await healthcheck(service)) === 200, { timeoutMs: 30_000, what: '/healthcheck 200 with Redis back' });
  },
);
