/**
 * The capacity client's refresh loop on a fake clock, against a real gRPC server of ours whose answers the test
 * scripts: the first refresh at once with every resource in one request; the next exactly one refresh interval
 * later, sending each lease back as `has`; retries after an exponential backoff with jitter; each resource falls
 * back exactly when its lease expires (not before), in its own mode, and is granted again when the server answers.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { CapacityClient, FakeTime } from '../../../src/capacity-client/index.js';
import { startCapacityServer, type ScriptedServer } from '../../support/capacity-client-redirector.js';
import { eventually } from '../../support/eventually.js';

const LEASE_S = 6;
const REFRESH_S = 2;
const open: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

/** A server granting min(wants, 100) on leases of the fake clock, or failing with UNAVAILABLE while `failing`. */
async function server(time: FakeTime): Promise<ScriptedServer & { failing: boolean }> {
  const state = { failing: false };
  const s = await startCapacityServer({
    GetCapacity: (request) => {
      if (state.failing) return Object.assign(new Error('down'), { code: grpc.status.UNAVAILABLE, details: 'down', metadata: new grpc.Metadata() });
      const expiry = Math.floor(time.nowMs() / 1000) + LEASE_S;
      const resources = request.resource as { resource_id: string; wants: number }[];
      return {
        response: resources.map((r) => ({
          resource_id: r.resource_id,
          gets: { expiry_time: expiry, refresh_interval: REFRESH_S, capacity: Math.min(r.wants, 100) },
          safe_capacity: 4,
        })),
      };
    },
  });
  open.push(s);
  return Object.defineProperty(s, 'failing', { get: () => state.failing, set: (v: boolean) => void (state.failing = v) }) as ScriptedServer & {
    failing: boolean;
  };
}

function client(time: FakeTime, address: string, backoff: { initialMs: number; maxMs: number }): CapacityClient {
  const c = new CapacityClient({ servers: address, clientId: 'loop', time, backoff, random: () => 0.5 });
  open.push(c);
  return c;
}

/** Real time passes (for the I/O) while the fake clock stands still: nothing more may happen. */
const quietly = () => new Promise((r) => setTimeout(r, 100));
const gets = (s: ScriptedServer) => s.calls.GetCapacity ?? 0;

describe('capacity client refresh loop (fake clock, real server)', () => {
  it('refreshes all resources at once, then every refresh interval, sending each lease back as has', async () => {
    const time = new FakeTime();
    const t0 = time.nowMs();
    const s = await server(time);
    const c = client(time, s.address, { initialMs: 250, maxMs: 30_000 });
    const x = c.resource('x', 10, { priority: 2 });
    const y = c.resource('y', 500);
    await eventually(() => x.capacity === 10 && y.capacity === 100, { what: 'first grant' });
    expect(gets(s)).toBe(1);
    expect(s.requests.GetCapacity![0]).toEqual({
      client_id: 'loop',
      resource: [
        { resource_id: 'x', priority: 2, wants: 10 },
        { resource_id: 'y', priority: 0, wants: 500 },
      ],
    });
    expect(x.lease).toEqual({ capacity: 10, expiryMs: t0 + LEASE_S * 1000, refreshIntervalMs: REFRESH_S * 1000 });
    await time.advance(REFRESH_S * 1000 - 1);
    await quietly();
    expect(gets(s)).toBe(1);
    await time.advance(1);
    await eventually(() => gets(s) === 2, { what: 'second refresh' });
    const has = (s.requests.GetCapacity![1]!.resource as { has: unknown }[]).map((r) => r.has);
    expect(has).toEqual([
      { expiry_time: t0 / 1000 + LEASE_S, refresh_interval: REFRESH_S, capacity: 10 },
      { expiry_time: t0 / 1000 + LEASE_S, refresh_interval: REFRESH_S, capacity: 100 },
    ]);
  });

  it('retries after an exponential backoff with jitter (250 ms doubling, half fixed, half random)', async () => {
    const time = new FakeTime();
    const s = await server(time);
    s.failing = true;
    const c = client(time, s.address, { initialMs: 250, maxMs: 1_000 });
    c.resource('x', 10);
    await eventually(() => c.failedRefreshes === 1, { what: 'first failure' });
    // random 0.5: 250 → 187.5 ms, 500 → 375, 1000 → 750, then capped at 1000 → 750
    for (const [n, delay] of [
      [2, 188],
      [3, 375],
      [4, 750],
      [5, 750],
    ] as const) {
      await time.advance(delay - 1);
      await quietly();
      expect(gets(s)).toBe(n - 1);
      await time.advance(1);
      await eventually(() => c.failedRefreshes === n, { what: `failure ${n}` });
    }
  });

  it('falls back exactly when the lease expires, each in its mode, and is granted again when the server answers', async () => {
    const time = new FakeTime();
    const t0 = time.nowMs();
    const s = await server(time);
    const c = client(time, s.address, { initialMs: 10_000, maxMs: 10_000 });
    const p = c.resource('p', 10, { fallback: 'pessimistic' });
    const o = c.resource('o', 20, { fallback: 'optimistic' });
    const safe = c.resource('s', 30, { fallback: 'safe', safeCapacity: 1 });
    expect([p.capacity, o.capacity, safe.capacity]).toEqual([0, 20, 1]); // before the first grant: the fallback
    await eventually(() => p.capacity === 10 && safe.capacity === 30, { what: 'granted' });
    s.failing = true;
    await time.advance(REFRESH_S * 1000); // the refresh at t0 + 2 s fails; the retry comes 7.5 s later
    await eventually(() => c.failedRefreshes === 1, { what: 'failed refresh' });
    await time.advance(LEASE_S * 1000 - REFRESH_S * 1000 - 1); // 1 ms before the lease ends
    expect([p.capacity, o.capacity, safe.capacity, p.inFallback]).toEqual([10, 20, 30, false]);
    await time.advance(1);
    expect(time.nowMs()).toBe(t0 + LEASE_S * 1000);
    expect([p.capacity, o.capacity, safe.capacity]).toEqual([0, 20, 4]); // safe: the server's last safe_capacity
    expect([p, o, safe].every((r) => r.inFallback)).toBe(true);
    s.failing = false;
    await time.advance(3_500); // the retry at t0 + 9.5 s
    await eventually(() => p.capacity === 10 && safe.capacity === 30 && !o.inFallback, { what: 'granted again' });
  });
});
