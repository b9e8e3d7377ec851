/**
 * The SIGTERM drain with a real Envoy sending (docs/kubernetes-shutdown.md: calls are "answered as usual" for
 * SHUTDOWN_DRAIN_MS). `ratelimit serve` runs as its own process behind Envoy's rate-limit filter
 * (failure_mode_deny: false, no health check, so Envoy keeps sending to it); after SIGTERM, requests on a
 * route limited to 4 are decided for real: exactly 4 admitted, Envoy counts no error and nothing failed
 * open, and the service made no FAILURE_MODE answer. Most requests are sent later in the drain than Envoy's
 * call timeout: a call's deadline must be measured as usual however long ago the signal came. On memory and Redis, with FAILURE_MODE open and closed
 * (a drain answered by the failure mode admits everything, or nothing).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { rlsBootstrap } from '../support/envoy-bootstrap.js';
import { envoyRlsCounts, minus } from '../support/envoy-stack.js';
import { describeEnvoy, startEnvoy } from '../support/envoy.js';
import { startUpstream, type Upstream } from '../support/envoy-upstream.js';
import { eventually } from '../support/eventually.js';
import { rawHttp } from '../support/http-raw.js';
import { startRedis, type RedisServer } from '../support/redis.js';
import { scrapeMetrics, total } from '../support/scrape.js';
import { spawnService } from '../support/service-process.js';

const LIMIT = 4;
const SENT = 16;
const DRAIN_MS = 3000;
/** Envoy's rate-limit call timeout; the late requests are sent more than this after the signal. */
const CALL_TIMEOUT_MS = 1000;
// A token bucket of 4 refilled over an hour: 4 admitted, whatever second or minute the test runs in.
const RULES = `domain: ops\ndescriptors:\n  - key: generic_key\n    value: drain\n    rate_limit: {unit: hour, requests_per_unit: ${LIMIT}, algorithm: token_bucket}\n  - key: generic_key\n    value: warm\n    rate_limit: {unit: second, requests_per_unit: 1000000}\n`;
const ROUTES = [
  { prefix: '/drain', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'drain' } }] }] },
  { prefix: '/', rateLimits: [{ actions: [{ generic_key: { descriptor_value: 'warm' } }] }] },
];

/** What must not move during the drain: FAILURE_MODE answers, gRPC errors, answers counted late. */
async function serviceCounts(http: string): Promise<{ fallbacks: number; errors: number; late: number }> {
  const samples = await scrapeMetrics(http);
  return {
    fallbacks: total(samples, 'ratelimit_store_fallbacks_total'),
    errors: total(samples, 'ratelimit_grpc_errors_total'),
    late: total(samples, 'ratelimit_grpc_late_answers_total'),
  };
}

describeEnvoy('the SIGTERM drain behind Envoy', () => {
  let upstream: Upstream;
  let redis: RedisServer;
  let dir: string;
  beforeAll(async () => {
    upstream = await startUpstream();
    redis = await startRedis();
    dir = mkdtempSync(join(tmpdir(), 'rl-envoy-drain-'));
    writeFileSync(join(dir, 'ops.yaml'), RULES);
  });
  afterAll(async () => {
    await upstream?.close();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['memory', 'open'],
    ['redis', 'open'],
    ['redis', 'closed'],
  ] as const)(
    'decides every call during the drain on %s (FAILURE_MODE=%s): the limit admitted, no error, nothing failed open',
    async (backend, failureMode) => {
      const prefix = `drain-${backend}-${failureMode}-${Date.now()}`;
      const svc = await spawnService({
        CONFIG_DIR: dir,
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
        SHUTDOWN_GRACE_MS: '2000',
        ...(backend === 'redis' ? { BACKEND: 'redis', REDIS_URL: redis.url, CACHE_KEY_PREFIX: prefix, FAILURE_MODE: failureMode } : {}),
      });
      const exited = new Promise<number | null>((resolve) => svc.child.once('exit', (code) => resolve(code)));
      const port = Number(svc.grpcAddress.split(':').at(-1));
      const envoy = await startEnvoy(
        rlsBootstrap({
          service: { address: '127.0.0.1', port },
          upstream: { address: '127.0.0.1', port: upstream.port },
          domain: 'ops',
          routes: ROUTES,
          filter: { timeout: `${CALL_TIMEOUT_MS / 1000}s` },
        }),
      ).catch(async (err: unknown) => {
        await svc.stop();
        throw err;
      });
      try {
        const ingress = await envoy.listenerPort('ingress');
        // Envoy's connection to the service is open and answering before the signal.
        await eventually(async () => (await rawHttp(ingress, 'GET', '/warm')).status === 200 && (await envoyRlsCounts(envoy, 'app')).ok > 0, {
          what: 'a decided request through Envoy',
        });
        const before = await envoyRlsCounts(envoy, 'app');
        const serviceBefore = await serviceCounts(svc.httpAddress);

        svc.child.kill('SIGTERM');
        await eventually(() => svc.stderr().includes('still answering during the drain'), { intervalMs: 10, what: 'the drain to begin' });
        const began = Date.now();
        const statuses: number[] = [];
        const send = async (n: number) => {
          for (let i = 0; i < n; i++) statuses.push((await rawHttp(ingress, 'GET', '/drain')).status);
        };
        await send(2);
        await new Promise((resolve) => setTimeout(resolve, began + CALL_TIMEOUT_MS * 1.5 - Date.now()));
        await send(SENT - 2);
        // Every request above was sent and answered inside the drain (else this test proves nothing).
        expect(svc.stderr()).not.toContain('drain over');
        const serviceAfter = await serviceCounts(svc.httpAddress);
        const counts = minus(await envoyRlsCounts(envoy, 'app'), before);

        expect({ admitted: statuses.filter((s) => s === 200).length, limited: statuses.filter((s) => s === 429).length }).toEqual({
          admitted: LIMIT,
          limited: SENT - LIMIT,
        });
        expect(counts).toEqual({ ok: LIMIT, overLimit: SENT - LIMIT, error: 0, failureModeAllowed: 0 });
        expect(serviceAfter).toEqual(serviceBefore);
        expect(await exited).toBe(0);
      } finally {
        await envoy.stop();
        await svc.stop();
      }
    },
    40_000,
  );
});
