/**
 * Two sidecar processes whose rule takes its limit from a capacity resource, against the real Doorman server and
 * against our capacity service (a third process): each
 * replica asks for its observed demand, Doorman splits the capacity (FAIR_SHARE 1,000/s), and each replica
 * enforces its share in process. Proven by the traffic each admits: while both are busy each admits about half
 * and together no more than the capacity (plus one bucket each); when one goes quiet its wants fall and the other
 * takes the slack; when the capacity server is killed the leases expire and the pessimistic fallback admits
 * nothing; when it returns, the shares come back. The server's own view (Doorman's /debug/resources, our /capacity) shows the sum
 * of grants within the capacity.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capacityPeers, type CapacityPeer } from '../support/capacity-client-ours.js';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { spawnService, type ServiceProcess } from '../support/service-process.js';

const CAPACITY = 1000;
/** Hits per request: 50 requests/s offered per replica are 2,500 hits/s, more than the whole capacity. */
const HITS = 50;

const RESOURCES = `resources:
  - identifier_glob: "*"
    capacity: ${CAPACITY}
    algorithm: {kind: FAIR_SHARE, lease_length: 3, refresh_interval: 1, learning_mode_duration: 0}
`;
const RULES = `domain: cap
descriptors:
  - key: route
    rate_limit: {unit: second, requests_per_unit: 5000, capacity: {resource: api-backend, fallback: pessimistic}}
`;

/** Offers requests to one sidecar at a steady pace (bounded in flight) and counts the hits admitted. */
class Driver {
  admitted = 0;
  sent = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  constructor(private readonly client: RlsTestClient) {}
  start(everyMs = 20): void {
    this.timer = setInterval(() => {
      if (this.inFlight >= 20) return;
      this.inFlight++;
      this.sent++;
      this.client
        .ask('cap', [[['route', 'r']]], HITS)
        .then(
          (r) => void (r.overall_code === 'OK' && (this.admitted += HITS)),
          () => undefined,
        )
        .finally(() => this.inFlight--);
    }, everyMs);
  }
  stop(): void {
    clearInterval(this.timer);
  }
  /** Hits admitted during `ms` from now. */
  async admittedOver(ms: number): Promise<number> {
    const before = this.admitted;
    await new Promise((r) => setTimeout(r, ms));
    return this.admitted - before;
  }
}

let server: CapacityPeer;
let dir: string;
const services: ServiceProcess[] = [];
const clients: RlsTestClient[] = [];
const drivers: Driver[] = [];

describe.each(capacityPeers())('sidecars as capacity clients of %s', (_name, startPeer) => {
  beforeAll(async () => {
    server = await startPeer(RESOURCES);
    dir = mkdtempSync(join(tmpdir(), 'rl-capclient-'));
    writeFileSync(join(dir, 'rules.yaml'), RULES);
    for (const id of ['replica-a', 'replica-b']) {
      const service = await spawnService({ CONFIG_DIR: dir, BACKEND: 'memory', CAPACITY_SERVER: server.address, CAPACITY_CLIENT_ID: id }, 60_000);
      services.push(service);
      const client = new RlsTestClient(service.grpcAddress);
      clients.push(client);
      drivers.push(new Driver(client));
    }
  }, 180_000);
  afterAll(async () => {
    for (const d of drivers.splice(0)) d.stop();
    for (const c of clients.splice(0)) c.close();
    await Promise.all(services.splice(0).map((s) => s.stop()));
    await server?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('splits the capacity by observed demand, enforces each share locally, and falls back when the server is gone', async () => {
    const [a, b] = drivers as [Driver, Driver];
    a.start();
    b.start();
    // Both busy: both ask for more than half, FAIR_SHARE gives 500 each (a few refreshes to settle).
    await eventually(
      async () => {
        const s = await server.resourceStatus('api-backend');
        return s !== undefined && s.clients === 2 && s.sumHas >= CAPACITY * 0.99;
      },
      { timeoutMs: 15_000, intervalMs: 200, what: 'both replicas granted' },
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const status = (await server.resourceStatus('api-backend'))!;
    expect(status.sumHas).toBeLessThanOrEqual(CAPACITY);
    const T = 4_000;
    const [gotA, gotB] = await Promise.all([a.admittedOver(T), b.admittedOver(T)]);
    if (process.env.SHOW_FIGURES) console.log({ status, gotA, gotB });
    // The grants never sum to more than the capacity, each bucket refills at its replica's grant and holds at
    // most one window of it: together at most the capacity over T plus one window's worth.
    const share = CAPACITY / 2;
    expect(gotA + gotB).toBeLessThanOrEqual(CAPACITY * (T / 1000) + CAPACITY + 2 * HITS);
    // ...and each really uses its share (the drivers offer 5× that).
    expect(gotA).toBeGreaterThanOrEqual(share * (T / 1000) * 0.5);
    expect(gotB).toBeGreaterThanOrEqual(share * (T / 1000) * 0.5);

    // B goes quiet: its observed wants fall to min_wants, A gets the slack.
    b.stop();
    // B's observed wants fall to min_wants at its next refreshes; A's share (and what it admits) grows.
    await eventually(() => a.admittedOver(1_000).then((n) => n > share * 1.4), { timeoutMs: 15_000, intervalMs: 10, what: 'A takes the slack' });
    const alone = await a.admittedOver(3_000);
    if (process.env.SHOW_FIGURES) console.log({ alone, quiet: await server.resourceStatus('api-backend') });
    expect(alone).toBeGreaterThan(share * 3 + share + HITS); // more than its old share could ever admit
    expect(alone).toBeLessThanOrEqual(CAPACITY * 3 + CAPACITY + HITS);

    // The capacity server killed: leases (3 s) expire, pessimistic fallback admits nothing.
    await server.kill();
    await new Promise((r) => setTimeout(r, 4_500));
    expect(await a.admittedOver(2_000)).toBe(0);
    // The server back: the shares return.
    await server.start();
    await eventually(() => a.admittedOver(1_000).then((n) => n > 0), { timeoutMs: 30_000, intervalMs: 10, what: 'admitting again' });
    a.stop();
    for (const s of services) expect(s.child.exitCode).toBeNull();
  }, 180_000);
});
