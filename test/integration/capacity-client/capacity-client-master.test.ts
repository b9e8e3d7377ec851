/**
 * The capacity client's bottom half over real sockets: mastership redirects (a real gRPC server of ours that is
 * never the master and names the real Doorman server as master — two real Doorman servers would need etcd for
 * their election), a server that knows no master (the client backs off and keeps its fallback), and `has` sent
 * back: a Doorman server restarted in learning mode echoes each client's reported lease, so a client that sends
 * `has` keeps its share across the restart while a new client gets 0.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CapacityClient, type CapacityError } from '../../../src/client/index.js';
import { DoormanProcess, doormanBinary } from '../../support/capacity-client-doorman.js';
import { startRedirector, type Redirector } from '../../support/capacity-client-redirector.js';
import { eventually } from '../../support/eventually.js';

const binary = doormanBinary();

const CONFIG = `resources:
  - identifier_glob: learn
    capacity: 100
    algorithm: {kind: FAIR_SHARE, lease_length: 3, refresh_interval: 1, learning_mode_duration: 3}
  - identifier_glob: "*"
    capacity: 100
    safe_capacity: 5
    algorithm: {kind: FAIR_SHARE, lease_length: 4, refresh_interval: 1, learning_mode_duration: 0}
`;

let doorman: DoormanProcess;
let redirector: Redirector;
const clients: CapacityClient[] = [];
const errors: CapacityError[] = [];

function client(servers: string | string[], id: string): CapacityClient {
  const c = new CapacityClient({ servers, clientId: id, backoff: { initialMs: 50, maxMs: 200 }, rpcTimeoutMs: 2_000, onError: (e) => errors.push(e) });
  clients.push(c);
  return c;
}

describe.skipIf(binary === undefined)('capacity client: mastership, backoff and has', () => {
  beforeAll(async () => {
    doorman = await DoormanProcess.start(binary!, CONFIG);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    errors.length = 0;
  });
  afterAll(async () => {
    await redirector?.close();
    await doorman?.destroy();
  });

  it('follows the mastership redirect of a non-master to the real Doorman master, and stays there', async () => {
    redirector = await startRedirector(doorman.address);
    const c = client(redirector.address, 'redirected');
    const r = c.resource('moved', 40);
    await eventually(() => r.capacity === 40, { timeoutMs: 10_000, what: 'granted by the master' });
    expect(c.serverAddress).toBe(doorman.address);
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
    redirector.setMaster(doorman.address);
    await eventually(() => r.capacity === 30, { timeoutMs: 10_000, what: 'granted after the master is named' });
    expect(r.safeCapacity).toBe(5); // the template's safe_capacity replaces the application's
  });

  it('sends its lease back as `has`: a restarted Doorman in learning mode gives it back its share', async () => {
    const holder = client(doorman.address, 'learned');
    const old = holder.resource('learn', 20);
    // Doorman echoes has (0 for a new client) for 3 s after it starts, then grants.
    await eventually(() => old.capacity === 20, { timeoutMs: 15_000, what: 'granted after learning mode' });
    await doorman.kill();
    const expiryBefore = old.lease!.expiryMs;
    await doorman.start();
    // a refresh answered by the restarted server (a lease that ends later than any the old server gave)
    await eventually(() => (old.lease?.expiryMs ?? 0) > expiryBefore, { timeoutMs: 10_000, intervalMs: 10, what: 'refreshed by the new server' });
    const fresh = client(doorman.address, 'newcomer').resource('learn', 20);
    await eventually(() => fresh.lease !== undefined, { timeoutMs: 10_000, what: 'newcomer answered' });
    expect(fresh.capacity).toBe(0); // learning mode: no has, nothing granted
    expect(old.capacity).toBe(20); // its `has` of 20 was echoed back
    expect(old.inFallback).toBe(false);
  });
});
