/**
 * USE_STATSD with no statsd server listening (a sidecar whose statsd host is gone): decisions go on, the
 * failure is logged once, not per flush, and the process does not grow a queue of unsent stats.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const RULES = 'domain: edge\ndescriptors:\n  - key: api\n    rate_limit: { unit: second, requests_per_unit: 100000 }\n';
const services: ServiceProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of services) await s.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it.each([['tcp'], ['udp']])(
  'STATSD_PROTOCOL=%s to a closed port: every request decided, one log line for many flushes',
  async (protocol) => {
    const dir = mkdtempSync(join(tmpdir(), 'statsd-unreachable-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'edge.yaml'), RULES);
    const closed = await freePort();
    const svc = await spawnService({
      CONFIG_DIR: dir,
      USE_STATSD: 'true',
      STATSD_HOST: '127.0.0.1',
      STATSD_PORT: String(closed),
      STATSD_PROTOCOL: protocol,
      STATS_FLUSH_INTERVAL: '100ms',
    });
    services.push(svc);
    const client = new RlsTestClient(svc.grpcAddress);
    try {
      // Requests spread over at least twenty flush intervals (and at most 2,000 requests).
      const until = Date.now() + 2_000;
      let answered = 0;
      for (let i = 0; i < 2_000 && Date.now() < until; i++) {
        const r = await client.ask('edge', [[['api', `k${i % 50}`]]], 1);
        if (r.overall_code === 'OK') answered++;
      }
      expect(answered).toBeGreaterThan(20);
    } finally {
      client.close();
    }
    const lines = svc
      .stderr()
      .split('\n')
      .filter((l) => l.includes('stats not sent'));
    // tcp: one refused connect logged for the whole outage; udp sends are fire-and-forget, nothing to log
    expect(lines.length).toBe(protocol === 'tcp' ? 1 : 0);
    expect(svc.child.exitCode).toBeNull();
  },
  30_000,
);
