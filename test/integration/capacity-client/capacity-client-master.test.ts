/**
 * The capacity client's bottom half over real sockets, with the real Doorman server and with ours as the master:
 * mastership redirects (a real gRPC server of ours that is never the master and names the master — two real
 * Doorman servers would need etcd for their election), a server that knows no master (the client backs off and
 * keeps its fallback), and `has` sent back: a server restarted with its state lost is in learning mode and echoes
 * each client's reported lease, so a client that sends `has` keeps its share across the restart while a new
 * client gets 0.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CapacityClient, type CapacityError } from '../../../src/capacity-client/index.js';
import { capacityPeers, type CapacityPeer } from '../../support/capacity-client-ours.js';
import { startRedirector, type Redirector } from '../../support/capacity-client-redirector.js';
import { eventually } from '../../support/eventually.js';

const CONFIG = `resources:
  - identifier_glob: learn
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 20, refresh_interval: 1, learning_mode_duration: 10}
  - identifier_glob: "*"
    capacity: 100
    safe_capacity: 5
    algorithm: {kind: FAIR_SHARE, lease_length: 4, refresh_interval: 1, learning_mode_duration: 0}
`;

let peer: CapacityPeer;
let redirector: Redirector;
const clients: CapacityClient[] = [];
const errors: CapacityError[] = [];

function client(servers: string | string[], id: string): CapacityClient {
  const c = new CapacityClient({ servers, clientId: id, backoff: { initialMs: 50, maxMs: 200 }, rpcTimeoutMs: 2_000, onError: (e) => errors.push(e) });
  clients.push(c);
  return c;
}

describe.each(capacityPeers())('capacity client with %s: mastership, backoff and has', (_name, startPeer) => {
  beforeAll(async () => {
    peer = await startPeer(CONFIG);
  });
  afterEach(async () => {
    // one after another: the real Doorman crashes on concurrent ReleaseCapacity calls (an unlocked map write)
    for (const c of clients.splice(0)) await c.close();
    errors.length = 0;
  });
  afterAll(async () => {
    await redirector?.close();
    await peer?.destroy();
  });

  it('follows the mastership redirect of a non-master to the master, and stays there', async () => {
    redirector = await startRedirector(peer.address);
    const c = client(redirector.address, 'redirected');
    const r = c.resource('moved', 40);
    await eventually(() => r.capacity === 40, { timeoutMs: 10_000, what: 'granted by the master' });
    expect(c.serverAddress).toBe(peer.address);
    const asked = { ...redirector.calls };
    expect((asked.Discovery ?? 0) + (asked.GetCapacity ?? 0)).toBeGreaterThanOrEqual(1);
    await eventually(() => c.refreshes >= 3, { timeoutMs: 10_000, what: 'more refreshes' });
    expect(redirector.calls).toEqual(asked); // later refreshes go to the master directly
    expect(errors).toEqual([]);
  });

  it('backs off from a server that knows no master, keeping the fallback, and gets a grant once one is named', async () => {
    redirector.setMaster('');
    const c = client(redirector.address, 'no-master');
    const r = c.resource('nomaster', 30, { fallback: 'safe', safeCapacity: 2 });
    await eventually(() => errors.length >= 3, { timeoutMs: 10_000, what: 'failed refreshes' });
    expect(errors.every((e) => e.code === 'CAPACITY_NO_MASTER')).toBe(true);
    expect(r.capacity).toBe(2);
    expect(r.inFallback).toBe(true);
    redirector.setMaster(peer.address);
    await eventually(() => r.capacity === 30, { timeoutMs: 10_000, what: 'granted after the master is named' });
    expect(r.safeCapacity).toBe(5); // the template's safe_capacity replaces the application's
  });

  it('sends its lease back as `has`: a restarted server in learning mode gives it back its share', async () => {
    const holder = client(peer.address, 'learned');
    const old = holder.resource('learn', 20);
    // The server echoes has (0 for a new client) for 10 s after it starts (long enough for a loaded machine to
    // restart it and ask again within), then grants.
    await eventually(() => old.capacity === 20, { timeoutMs: 25_000, what: 'granted after learning mode' });
    await peer.kill();
    const expiryBefore = old.lease!.expiryMs;
    await peer.start();
    expect(old.inFallback).toBe(false); // the 20 s lease outlives the restart: it is still sent as has
    // a refresh answered by the restarted server (a lease that ends later than any the old server gave)
    await eventually(() => (old.lease?.expiryMs ?? 0) > expiryBefore, { timeoutMs: 10_000, intervalMs: 10, what: 'refreshed by the new server' });
    const fresh = client(peer.address, 'newcomer').resource('learn', 20);
    await eventually(() => fresh.lease !== undefined, { timeoutMs: 10_000, what: 'newcomer answered' });
    expect(fresh.capacity).toBe(0); // learning mode: no has, nothing granted
    expect(old.capacity).toBe(20); // its `has` of 20 was echoed back
    expect(old.inFallback).toBe(false);
  }, 120_000); // restarts a server: tens of seconds on a loaded machine
});
