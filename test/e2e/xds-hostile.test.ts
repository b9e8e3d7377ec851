/**
 * The xDS client (CONFIG_TYPE=GRPC_XDS_SOTW, `ratelimit serve` as its own process) against broken and hostile
 * peers: a server answering every request with bytes that are not a DiscoveryResponse, a proxy that holds the
 * connection without forwarding, one resource larger as JSON than CONFIG_MAX_FILE_BYTES but not as received,
 * and a large set (100,000 descriptors over 40 resources) applied while requests are being answered.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startAnsweringXds, startHoldingProxy } from '../support/hostile-xds.js';
import { freePort } from '../support/redis.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';
import { startXdsServer, type XdsEvent, type XdsServer } from '../support/xds-server.js';

const NODE = 'hostile';
const env = (port: number, extra: Record<string, string> = {}) => ({
  CONFIG_TYPE: 'GRPC_XDS_SOTW',
  CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${port}`,
  CONFIG_GRPC_XDS_NODE_ID: NODE,
  FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
  XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '200ms',
  XDS_CLIENT_BACKOFF_MAX_INTERVAL: '1s',
  ...extra,
});
const ack = (version: string) => (e: XdsEvent) => e.event === 'request' && e.version === version && e.nonce !== '';
const count = (text: string, what: string) => text.split(what).length - 1;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const descriptors = (n: number, prefix = 'k') =>
  Array.from({ length: n }, (_, i) => ({ key: prefix, value: `v${i}`, rateLimit: { unit: 'SECOND', requestsPerUnit: 10 } }));

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});
async function service(e: Record<string, string>): Promise<ServiceProcess> {
  const svc = await spawnService(e);
  cleanup.push(() => svc.stop());
  return svc;
}
async function xdsServer(port: number, snapshot: { version: string; resources: Record<string, unknown>[] }): Promise<XdsServer> {
  const x = await startXdsServer({ port, node: NODE, snapshot });
  cleanup.push(() => x.close());
  return x;
}

/** An xDS server with version 1 of `resources`, a service that ACKed it, and a client of that service. */
async function serving(port: number, resources: Record<string, unknown>[], what: string, timeoutMs: number) {
  const x = await xdsServer(port, { version: '1', resources });
  const svc = await service(env(port));
  await x.waitFor(ack('1'), { timeoutMs, what });
  const client = new RlsTestClient(svc.grpcAddress);
  cleanup.push(() => Promise.resolve(client.close()));
  return { x, svc, client };
}

describe('xDS client against hostile peers', () => {
  it.each([
    ['the same bytes every time', () => Buffer.from([0xff, 0xff, 0xff, 0xff])],
    ['different bytes every time', () => Buffer.concat([Buffer.from([0x0a, 0xff]), randomBytes(16)])],
  ])(
    'paces its NACKs and bounds its log when every response is undecodable (%s)',
    async (_what, garbage) => {
      const port = await freePort();
      const hostile = await startAnsweringXds(port, garbage);
      cleanup.push(() => hostile.close());
      const svc = await service(env(port));
      await sleepUntil(() => hostile.requests.length > 0, 10_000);
      const from = hostile.requests[0]!.at;
      await sleep(3000);
      const within = hostile.requests.filter((r) => r.at - from <= 3000).length;
      // 1 at once, then 50, 100, 200, 400 ms, then every 500 ms: about 9 in 3 s (unpaced: thousands).
      expect(within).toBeLessThanOrEqual(12);
      expect(within).toBeGreaterThanOrEqual(3);
      // Logged once, or at most once a second when the error changes every time.
      expect(count(svc.stderr(), 'xDS rules refused')).toBeLessThanOrEqual(4);
      expect(count(svc.stderr(), 'xDS rules refused')).toBeGreaterThanOrEqual(1);
      const rules = (await (await fetch(`http://${svc.httpAddress}/rules`)).json()) as { source: { refused: number; lastNack: { error: string } } };
      expect(rules.source.lastNack.error).toMatch(/malformed DiscoveryResponse/);
    },
    30_000,
  );

  it('takes a server that stops answering keepalive pings for dead, logs it, and reaches the server again', async () => {
    const [xdsPort, proxyPort] = [await freePort(), await freePort()];
    const x = await xdsServer(xdsPort, { version: '1', resources: [{ name: 'p', domain: 'd', descriptors: descriptors(1) }] });
    const proxy = await startHoldingProxy(proxyPort, { host: '127.0.0.1', port: xdsPort });
    cleanup.push(() => proxy.close());
    const svc = await service(env(proxyPort, { XDS_CLIENT_KEEPALIVE_TIME: '1s', XDS_CLIENT_KEEPALIVE_TIMEOUT: '1s' }));
    await x.waitFor(ack('1'), { timeoutMs: 20_000, what: 'the ACK of version 1' });
    proxy.hold();
    const mark = x.events.length;
    const t0 = Date.now();
    x.set('2', [{ name: 'p', domain: 'd', descriptors: descriptors(2) }]);
    await x.waitFor(ack('2'), { from: mark, timeoutMs: 15_000, what: 'the ACK of version 2 over a new connection' });
    expect(Date.now() - t0).toBeLessThan(8000);
    expect(proxy.connections()).toBeGreaterThanOrEqual(2);
    expect(
      svc
        .stderr()
        .split('\n')
        .filter((l) => l.includes('xDS stream down') && l.includes('Connection dropped')),
    ).toHaveLength(1);
  }, 40_000);

  it('bounds a resource by the bytes received: 6,000 descriptors (over 1 MiB as JSON) apply; a resource over CONFIG_MAX_FILE_BYTES as received is refused', async () => {
    const port = await freePort();
    const { x, svc, client } = await serving(
      port,
      [{ name: 'big', domain: 'd', descriptors: descriptors(6000) }],
      'the ACK of one resource of 6,000 descriptors',
      30_000,
    );
    expect((await client.ask('d', [[['k', 'v5999']]], 11)).overall_code).toBe('OVER_LIMIT');
    await svc.stop();

    const small = await service(env(port, { CONFIG_MAX_FILE_BYTES: '4096' }));
    const mark = x.events.length;
    x.set('2', [{ name: 'big', domain: 'd', descriptors: descriptors(300) }]);
    const nack = await x.waitFor((e) => e.event === 'nack' && e.stream !== undefined, {
      from: mark,
      timeoutMs: 20_000,
      what: 'the NACK of a resource over 4096 bytes',
    });
    expect(nack.error).toMatch(/^resources\[0\]: \d+ bytes, over the 4096 bytes a resource may have \(CONFIG_MAX_FILE_BYTES\)/);
    expect(small.stderr()).toContain('xDS rules refused');
  }, 60_000);

  it('applies 100,000 descriptors over 40 resources within seconds while every request is answered in time', async () => {
    const { x, svc, client } = await serving(await freePort(), [{ name: 'p', domain: 'd', descriptors: descriptors(1) }], 'the ACK of version 1', 20_000);
    const big = Array.from({ length: 40 }, (_, r) => ({ name: `r${r}`, domain: r === 0 ? 'd' : `d${r}`, descriptors: descriptors(2500) }));
    const mark = x.events.length;
    const cpu0 = process.cpuUsage();
    const stat = () => readFileSync(`/proc/${svc.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ticks = () => Number(stat()[11]) + Number(stat()[12]);
    const before = ticks();
    let peakRss = 0;
    const t0 = Date.now();
    x.set('2', big);
    const acked = x.waitFor(ack('2'), { from: mark, timeoutMs: 60_000, what: 'the ACK of the large set' });
    let done = false;
    void acked.then(
      () => (done = true),
      () => (done = true),
    );
    let worst = 0;
    let failed = 0;
    while (!done) {
      const s = performance.now();
      await client.ask('d', [[['k', 'v0']]], 0).catch(() => failed++);
      worst = Math.max(worst, performance.now() - s);
      peakRss = Math.max(peakRss, Number(stat()[21]) * 4096);
      await sleep(50);
    }
    await acked;
    const applyMs = Date.now() - t0;
    const cpuMs = ((ticks() - before) * 1000) / 100;
    console.log(
      `100,000 descriptors over 40 resources: applied in ${applyMs} ms, ${cpuMs} ms of CPU, peak RSS ${Math.round(peakRss / 1e6)} MB, slowest request ${Math.round(worst)} ms, ${failed} failed (test process CPU ${Math.round(process.cpuUsage(cpu0).user / 1000)} ms)`,
    );
    expect((await client.ask('d1', [[['k', 'v2499']]], 11)).overall_code).toBe('OVER_LIMIT');
    if (process.env['XDS_BIG_FIGURES_ONLY'] === '1') return;
    // Decided between the slices of the apply (about 10 ms each; the old rules until the new ones are in whole):
    // well within the 2 s deadline the old code missed (it stalled for 5 s), on a loaded machine too.
    expect(worst).toBeLessThan(2000);
    expect(failed).toBe(0);
    // Within an order of magnitude of envoyproxy/ratelimit (about 1.5 s here), on a loaded machine too.
    expect(applyMs).toBeLessThan(15_000);
  }, 90_000);
});

async function sleepUntil(check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms`);
    await sleep(20);
  }
}
