/**
 * The capacity client against the real Doorman server (the protocol's oracle) and against our capacity service,
 * the same sequences for both: the grants it receives are the ones Doorman computes (FAIR_SHARE 120, wants
 * 1000/50/10 → 60/50/10), one bulk GetCapacity refreshes every resource, release gives capacity back to the others,
 * `ask` changes the share, and when the server is killed (SIGKILL) each resource falls back in its mode once its
 * lease expires, and is granted again when the server returns.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CapacityClient, type Resource } from '../../../src/capacity-client/index.js';
import { capacityPeers, type CapacityPeer } from '../../support/capacity-client-ours.js';
import { eventually } from '../../support/eventually.js';

const CONFIG = `resources:
  - identifier_glob: fair
    capacity: 120
    safe_capacity: 7
    algorithm: {kind: FAIR_SHARE, lease_length: 2, refresh_interval: 1, learning_mode_duration: 0}
  - identifier_glob: slow
    capacity: 10
    algorithm: {kind: FAIR_SHARE, lease_length: 20, refresh_interval: 5, learning_mode_duration: 0}
  - identifier_glob: "*"
    capacity: 100
    safe_capacity: 3
    algorithm: {kind: FAIR_SHARE, lease_length: 2, refresh_interval: 1, learning_mode_duration: 0}
`;

let peer: CapacityPeer;
const clients: CapacityClient[] = [];

function client(id: string): CapacityClient {
  const c = new CapacityClient({ servers: peer.address, clientId: id, backoff: { initialMs: 50, maxMs: 400 }, rpcTimeoutMs: 2_000 });
  clients.push(c);
  return c;
}

const capacities = (resources: Resource[]) => resources.map((r) => Math.round(r.capacity * 100) / 100);

describe.each(capacityPeers())('capacity client against %s', (name, startPeer) => {
  beforeAll(async () => {
    peer = await startPeer(CONFIG);
  });
  afterEach(async () => {
    // one after another: the real Doorman crashes on concurrent ReleaseCapacity calls (an unlocked map write)
    for (const c of clients.splice(0)) await c.close();
    expect(peer.crashed, 'the capacity server died by itself').toBeUndefined();
  });
  afterAll(async () => {
    await peer?.destroy();
  });

  it('receives the grants Doorman computes: FAIR_SHARE 120 with wants 1000/50/10 settles at 60/50/10', async () => {
    const resources = [client('a').resource('fair', 1000), client('b').resource('fair', 50), client('c').resource('fair', 10)];
    await eventually(() => capacities(resources).join('/') === '60/50/10', { timeoutMs: 15_000, what: 'fair shares 60/50/10' });
    // never over-granted while settling, and each grant is a running lease with Doorman's refresh interval
    expect(resources.reduce((sum, r) => sum + r.capacity, 0)).toBeLessThanOrEqual(120);
    for (const r of resources) expect(r.lease?.refreshIntervalMs).toBe(1000);
    expect(resources[0]!.safeCapacity).toBe(7);
  });

  it('refreshes all its resources in one GetCapacity each refresh interval (the smallest of the leases)', async () => {
    const c = client('bulk');
    const fast = c.resource('bulk-fast', 40);
    const slow = c.resource('slow', 4);
    await eventually(() => fast.capacity === 40 && slow.capacity === 4, { timeoutMs: 10_000, what: 'both granted' });
    expect(slow.lease?.refreshIntervalMs).toBe(5000);
    const before = c.refreshes;
    const slowExpiry = slow.lease!.expiryMs;
    // 1 s refresh interval (the fast lease's): within ~3 s, about 3 refreshes — each renews the slow lease too
    await new Promise((r) => setTimeout(r, 3_000));
    const done = c.refreshes - before;
    expect(done).toBeGreaterThanOrEqual(2);
    expect(done).toBeLessThanOrEqual(4);
    expect(slow.lease!.expiryMs).toBeGreaterThan(slowExpiry);
    expect(c.failedRefreshes).toBe(0);
  });

  it('release gives the share back: the other client takes the whole capacity', async () => {
    const a = client('rel-a').resource('released', 1000);
    const b = client('rel-b').resource('released', 1000);
    await eventually(() => a.capacity === 50 && b.capacity === 50, { timeoutMs: 10_000, what: '50/50' });
    await a.release();
    expect(a.capacity).toBe(0);
    await eventually(() => b.capacity === 100, { timeoutMs: 10_000, what: 'b takes all 100' });
  });

  // The real Doorman writes a map in ReleaseCapacity without its lock: releases from many clients at once crash it
  // ("concurrent map writes"). Ours must keep serving, with every released share back in the pool.
  it.runIf(name === 'our capacity service')('survives many clients releasing at once, and their shares come back', async () => {
    const many = Array.from({ length: 8 }, (_, i) => client(`burst-${i}`).resource('burst', 10));
    await eventually(() => many.every((r) => r.capacity === 10), { timeoutMs: 10_000, what: '8 grants of 10' });
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await eventually(async () => ((await peer.resourceStatus('burst'))?.sumHas ?? 0) === 0, { timeoutMs: 5_000, what: 'all released' });
    const after = client('burst-after').resource('burst', 100);
    await eventually(() => after.capacity === 100, { timeoutMs: 10_000, what: 'the whole capacity to a new client' });
  });

  it('ask changes the share on the next call, without waiting for the refresh interval', async () => {
    const c = client('asker');
    const r = c.resource('asked', 10);
    await eventually(() => r.capacity === 10, { timeoutMs: 10_000, what: 'first grant' });
    r.ask(30);
    await eventually(() => r.capacity === 30, { timeoutMs: 900, intervalMs: 5, what: 'the new wants granted' });
  });

  it('falls back per mode when the server is killed and the lease expires, and recovers when it returns', async () => {
    const c = client('outage');
    const pessimistic = c.resource('out-p', 20, { fallback: 'pessimistic' });
    const optimistic = c.resource('out-o', 25, { fallback: 'optimistic' });
    const safe = c.resource('out-s', 30, { fallback: 'safe' });
    const all = [pessimistic, optimistic, safe];
    await eventually(() => capacities(all).join('/') === '20/25/30', { timeoutMs: 10_000, what: 'granted' });
    expect(all.every((r) => !r.inFallback)).toBe(true);
    await peer.kill();
    // Each lease's expiry as last granted (no refresh can succeed from here), and when each resource fell back.
    const expiries = all.map((r) => r.lease!.expiryMs);
    const fellBackAt: number[] = [];
    all.forEach((r, i) => r.once('capacity', () => (fellBackAt[i] = Date.now())));
    expect(all.every((r) => !r.inFallback)).toBe(true); // the grant holds while the lease runs
    await eventually(() => all.every((r) => r.inFallback), { timeoutMs: 6_000, intervalMs: 10, what: 'fallback' });
    for (const [i, at] of fellBackAt.entries()) {
      if (all[i]!.fallback === 'optimistic') continue; // its fallback equals its grant: no change to see
      expect(at).toBeGreaterThanOrEqual(expiries[i]!); // not before the lease ran out...
      expect(at - expiries[i]!).toBeLessThan(1_000); // ...and at once when it did (the loop wakes at the expiry)
    }
    expect(capacities(all)).toEqual([0, 25, 3]); // 0; what it wants; the template's safe_capacity
    expect(c.failedRefreshes).toBeGreaterThan(0);
    await peer.start();
    await eventually(() => capacities(all).join('/') === '20/25/30' && all.every((r) => !r.inFallback), { timeoutMs: 10_000, what: 'recovered' });
  }, 120_000); // restarts a server: tens of seconds on a loaded machine
});
