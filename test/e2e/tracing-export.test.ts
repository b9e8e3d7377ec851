/**
 * A collector that is down, or that takes connections and never answers, never delays or fails a decision: the
 * service (`ratelimit serve`, its own process, every call sampled) answers every call while its spans are dropped,
 * says so once per outage, and says once that the collector takes spans again when it comes back.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/redis.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const RULES = 'domain: exp\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1000000}\n';
const dir = mkdtempSync(join(tmpdir(), 'rl-tracing-export-'));
writeFileSync(join(dir, 'exp.yaml'), RULES);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const BODY = JSON.stringify({ domain: 'exp', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] });
/** The longest a decision may take on a loaded 2-core machine; an export in the way would take the export timeout (5 s or 30 s). */
const DECISION_BOUND_MS = 1_500;

function start(endpoint: string, extra: Record<string, string> = {}): Promise<ServiceProcess> {
  return spawnService({
    CONFIG_DIR: dir,
    JSON_API: 'on',
    TRACING_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_BSP_SCHEDULE_DELAY: '20',
    OTEL_EXPORTER_OTLP_TIMEOUT: '30000',
    ...extra,
  });
}

/** `n` decisions, 20 at a time, each with a sampled traceparent: every status and the slowest answer. */
async function decide(svc: ServiceProcess, n: number): Promise<{ statuses: Set<number>; slowestMs: number }> {
  const statuses = new Set<number>();
  let slowestMs = 0;
  for (let i = 0; i < n; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, async (_, j) => {
        const t0 = performance.now();
        const traceparent = `00-${(i + j + 1).toString(16).padStart(32, 'a')}-${'b'.repeat(16)}-01`;
        const res = await fetch(`http://${svc.httpAddress}/json`, { method: 'POST', headers: { traceparent }, body: BODY });
        await res.arrayBuffer();
        statuses.add(res.status);
        slowestMs = Math.max(slowestMs, performance.now() - t0);
      }),
    );
  }
  return { statuses, slowestMs };
}

const count = (text: string, needle: string) => text.split('\n').filter((l) => l.includes(needle)).length;
const FAILING = 'the collector did not take spans';
const BACK = 'the collector takes spans again';

describe('tracing with a collector away', () => {
  it('down: decisions unaffected, logged once, and once more when it comes back', async () => {
    const port = await freePort();
    const svc = await start(`http://127.0.0.1:${port}`);
    let collector: http.Server | undefined;
    try {
      const first = await decide(svc, 200);
      expect([...first.statuses]).toEqual([200]);
      expect(first.slowestMs).toBeLessThan(DECISION_BOUND_MS);
      await eventually(() => count(svc.stderr(), FAILING) > 0, { timeoutMs: 20_000, what: 'the failing-collector warning' });
      const more = await decide(svc, 200);
      expect([...more.statuses]).toEqual([200]);
      expect(more.slowestMs).toBeLessThan(DECISION_BOUND_MS);

      let posts = 0;
      collector = http.createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          posts++;
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        });
      });
      await new Promise<void>((resolve) => collector!.listen(port, '127.0.0.1', resolve));
      // Spans keep coming until the collector has taken some and the recovery is logged.
      await eventually(
        async () => {
          await decide(svc, 20);
          return posts > 0 && count(svc.stderr(), BACK) > 0;
        },
        { timeoutMs: 30_000, intervalMs: 100, what: 'the collector to take spans again' },
      );
      expect(count(svc.stderr(), FAILING)).toBe(1);
      expect(count(svc.stderr(), BACK)).toBe(1);
    } finally {
      await svc.stop();
      await new Promise((resolve) => (collector ? collector.close(resolve) : resolve(undefined)));
    }
  }, 120_000);

  it('never answering: decisions unaffected, the queue bounded and its drops logged at most once a minute', async () => {
    const sockets = new Set<net.Socket>();
    const hole = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
      s.resume();
    });
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
    const port = (hole.address() as net.AddressInfo).port;
    const svc = await start(`http://127.0.0.1:${port}`, { OTEL_BSP_MAX_QUEUE_SIZE: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '5000' });
    try {
      const { statuses, slowestMs } = await decide(svc, 600);
      expect([...statuses]).toEqual([200]);
      expect(slowestMs).toBeLessThan(DECISION_BOUND_MS);
      // The queue held 50 spans and dropped the rest; the SDK counts them and reports the count, through our log,
      // with the first span it can queue again (once the stuck export has timed out).
      await eventually(
        async () => {
          await decide(svc, 5);
          return count(svc.stderr(), 'because maxQueueSize reached') > 0;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: 'the dropped-spans warning' },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${svc.stderr()}`);
      });
      await decide(svc, 200);
      expect(count(svc.stderr(), 'because maxQueueSize reached')).toBe(1);
    } finally {
      await svc.stop();
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => hole.close(resolve));
    }
  }, 120_000);
});
