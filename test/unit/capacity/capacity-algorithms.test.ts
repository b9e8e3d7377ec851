/**
 * The capacity algorithms with an injected clock: Doorman's documented examples, the indexed decisions against
 * a literal O(n) reading of Doorman's loops, the water-filling kind where it differs from FAIR_SHARE, learning
 * mode, expiry and release.
 */
import { describe, expect, it } from 'vitest';
import { decideShare, type ShareView } from '../../../src/capacity/algorithms.js';
import { CapacityServer } from '../../../src/capacity/capacity-server.js';
import { parseCapacityConfig, type AlgorithmKind } from '../../../src/capacity/config.js';
import { LeaseStore } from '../../../src/capacity/resource-leases.js';
import { FakeClock } from '../../../src/vocab/clock.js';
import { prng } from '../../support/prng.js';

function server(kind: string, options: { learning?: number; lease?: number; capacity?: number; extra?: string } = {}) {
  const text = `resources:\n  - identifier_glob: "*"\n    capacity: ${options.capacity ?? 120}\n    algorithm: {kind: ${kind}, lease_length: ${options.lease ?? 60}, refresh_interval: 5, learning_mode_duration: ${options.learning ?? 0}${options.extra ?? ''}}\n`;
  const cfg = parseCapacityConfig('r.yaml', text);
  if (!cfg.ok) throw new Error(cfg.errors.join('\n'));
  const clock = new FakeClock(1_700_000_000_000);
  const srv = new CapacityServer({ clock, config: () => cfg.config, address: () => '127.0.0.1:1', stateSinceMs: clock.nowMs() });
  const get = (client: string, wants: number, has?: number) =>
    srv.getCapacity({
      client_id: client,
      resource: [{ resource_id: 'r', priority: 1, wants, ...(has === undefined ? {} : { has: { capacity: has, expiry_time: 0, refresh_interval: 0 } }) }],
    }).response[0]!;
  return { srv, clock, get };
}

function rounds(get: (c: string, w: number) => { gets: { capacity: number } }, n: number): number[] {
  let last: number[] = [];
  for (let i = 0; i < n; i++) last = [get('a', 1000).gets.capacity, get('b', 50).gets.capacity, get('c', 10).gets.capacity];
  return last;
}

describe('capacity algorithms', () => {
  it("FAIR_SHARE: Doorman's example, 120 with wants 1000/50/10 → 60/50/10 once settled (first round 120/0/0: grants ≤ avail)", () => {
    const { get } = server('FAIR_SHARE');
    expect(rounds(get, 1)).toEqual([120, 0, 0]);
    expect(rounds(get, 2)).toEqual([60, 50, 10]);
  });

  it("PROPORTIONAL_SHARE: Doorman's example → 69.69/40.31/10", () => {
    const { get } = server('PROPORTIONAL_SHARE');
    const [a, b, c] = rounds(get, 3);
    expect(a).toBeCloseTo(69.69, 2);
    expect(b).toBeCloseTo(40.31, 2);
    expect(c).toBe(10);
  });

  it('STATIC caps each client at the capacity; NO_ALGORITHM grants what is wanted', () => {
    expect(rounds(server('STATIC').get, 2)).toEqual([120, 50, 10]);
    expect(rounds(server('NO_ALGORITHM').get, 2)).toEqual([1000, 50, 10]);
  });

  it('FAIR_SHARE_MAXMIN fills water to the level FAIR_SHARE stops short of after two rounds', () => {
    // C = 100, wants 1, 19, 26, 26.8, 1000: FAIR_SHARE gives the big client 27.0, max-min 27.2
    // (1 + 19 + 26 + 26.8 + λ = 100).
    const store = new LeaseStore();
    const wants = { a: 1, b: 19, c: 26, d: 26.8, e: 1000 };
    for (const [id, w] of Object.entries(wants)) store.assign(id, { has: 0, wants: w, subclients: 1, expiryMs: 1e15, refreshInterval: 1, priority: 0 });
    const decide = (kind: AlgorithmKind) => decideShare(kind, 100, store.view('e'), { client: 'e', wants: 1000, subclients: 1 });
    expect(decide('FAIR_SHARE')).toBeCloseTo(27.0, 9);
    expect(decide('FAIR_SHARE_MAXMIN')).toBeCloseTo(27.2, 9);
    // The client at 26.8 gets what it wants under max-min (below the level).
    expect(decideShare('FAIR_SHARE_MAXMIN', 100, store.view('d'), { client: 'd', wants: 26.8, subclients: 1 })).toBeCloseTo(26.8, 9);
  });

  it('the indexed FAIR_SHARE and PROPORTIONAL_SHARE equal a literal walk over every client (random states)', () => {
    const r = prng('capacity-index');
    for (let round = 0; round < 1000; round++) {
      const store = new LeaseStore();
      const n = r.int(1, 30);
      // No client with several subclients, many, or a few among clients with one (the usual tree).
      const multi = r.pick([0, 0.5, 0.1]);
      for (let i = 0; i < n; i++) {
        const w = r.pick([0, 1, 5, 10, 20, 40, 50, 100, 1000]) * (r.chance(0.2) ? 1.5 : 1);
        store.assign(`c${i}`, { has: r.int(0, 5), wants: w, subclients: r.chance(multi) ? r.int(2, 4) : 1, expiryMs: 1e15, refreshInterval: 1, priority: 0 });
      }
      const capacity = r.pick([10, 100, 120, 1000]);
      const client = r.chance(0.2) ? 'new' : `c${r.int(0, n - 1)}`;
      const req = { client, wants: r.pick([0, 5, 30, 60, 200, 5000]), subclients: r.chance(multi) ? r.int(2, 4) : 1 };
      const view = store.view(client);
      expect(decideShare('FAIR_SHARE', capacity, view, req)).toBeCloseTo(literalFair(capacity, view, store, req), 9);
      expect(decideShare('PROPORTIONAL_SHARE', capacity, store.view(client), req)).toBeCloseTo(
        literalProportional(capacity, store.view(client), store, req),
        9,
      );
    }
  });

  it('learning mode echoes the reported has for learning_mode_duration after the state was lost, then decides', () => {
    const { get, clock } = server('FAIR_SHARE', { learning: 10 });
    expect(get('a', 1000, 70).gets.capacity).toBe(70);
    expect(get('b', 50).gets.capacity).toBe(0);
    clock.advance(9_999);
    expect(get('c', 10, 30).gets.capacity).toBe(30);
    clock.advance(1);
    // Out of learning mode: 70 + 30 held of 120; b's equal share is 40 but only 20 is unallocated.
    expect(get('b', 50).gets.capacity).toBe(20);
  });

  it('leases expire after lease_length; releases free the capacity at once', () => {
    const { get, clock, srv } = server('FAIR_SHARE', { lease: 10 });
    expect(get('a', 100).gets.capacity).toBe(100);
    expect(get('b', 100).gets.capacity).toBe(20);
    clock.advance(10_001);
    expect(get('b', 100).gets.capacity).toBe(100); // a's lease expired
    srv.releaseCapacity({ client_id: 'b', resource_id: ['r'] });
    expect(get('a', 100).gets.capacity).toBe(100);
    const lease = get('a', 100).gets;
    expect(lease.expiry_time).toBe(Math.floor(clock.nowMs() / 1000) + 10);
    expect(lease.refresh_interval).toBe(5);
  });

  it('answers safe_capacity: the template value, else capacity ÷ clients', () => {
    const { get } = server('FAIR_SHARE');
    expect(get('a', 10).safe_capacity).toBe(120);
    expect(get('b', 10).safe_capacity).toBe(60);
  });
});

type Req = { client: string; wants: number; subclients: number };

/** Doorman's FAIR_SHARE read literally: two passes over every lease. */
function literalFair(capacity: number, view: ShareView, store: LeaseStore, req: Req): number {
  const old = view.old;
  const avail = capacity - view.sumHas + (old?.has ?? 0);
  const eq = capacity / (view.count - (old?.subclients ?? 0) + req.subclients);
  const d = eq * req.subclients;
  if (req.wants <= d) return Math.max(0, Math.min(req.wants, avail));
  let extra = 0;
  let wanting = req.subclients;
  store.forEach((id, l) => {
    if (id === req.client) return;
    if (l.wants < eq * l.subclients) extra += eq * l.subclients - l.wants;
    else if (l.wants > eq * l.subclients) wanting += l.subclients;
  });
  const level = d + (extra / wanting) * req.subclients;
  if (req.wants < level) return Math.max(0, Math.min(req.wants, avail));
  let xx = 0;
  let wanting2 = req.subclients;
  store.forEach((id, l) => {
    if (id === req.client || l.wants <= eq * l.subclients) return;
    if (l.wants < level) xx += level - l.wants;
    else if (l.wants > level) wanting2 += l.subclients;
  });
  return Math.max(0, Math.min(level + (xx / wanting2) * req.subclients, avail));
}

/** Doorman's PROPORTIONAL_SHARE read literally. */
function literalProportional(capacity: number, view: ShareView, store: LeaseStore, req: Req): number {
  const old = view.old;
  const avail = capacity - view.sumHas + (old?.has ?? 0);
  const eq = capacity / (old === undefined ? view.count + req.subclients : view.count);
  const mine = eq * req.subclients;
  if (view.sumWants <= capacity || req.wants <= mine) return Math.max(0, Math.min(req.wants, avail));
  let spare = 0;
  let need = 0;
  store.forEach((id, l) => {
    const w = id === req.client ? req.wants : l.wants;
    const s = id === req.client ? req.subclients : l.subclients;
    if (w < eq * s) spare += eq * s - w;
    else need += w - eq * s;
  });
  return Math.max(0, Math.min(mine + (req.wants - mine) * (need > 0 ? spare / need : 0), avail));
}

describe('ShareIndex.waterLevel', () => {
  it('equals the level found by brute force', async () => {
    const { ShareIndex } = await import('../../../src/capacity/share-index.js');
    const r = prng('water');
    for (let round = 0; round < 300; round++) {
      const index = new ShareIndex();
      const clients: { w: number; s: number }[] = [];
      for (let i = 0, n = r.int(1, 40); i < n; i++) {
        const c = { w: r.int(0, 200), s: r.int(1, 3) };
        clients.push(c);
        index.insert(`c${i}`, c.w, c.s);
      }
      const capacity = r.int(1, 2000);
      const level = index.waterLevel(capacity);
      const used = (x: number) => clients.reduce((sum, c) => sum + Math.min(c.w, x * c.s), 0);
      if (clients.reduce((sum, c) => sum + c.w, 0) <= capacity) expect(level).toBe(Infinity);
      else expect(used(level)).toBeCloseTo(capacity, 6);
    }
  });
});

describe('priorities: ignored as by Doorman, unless a template sets priority_bands', () => {
  it('every kind ignores priority by default: a priority-0 client on STATIC gets min(wants, capacity) however much others hold', () => {
    const { srv } = server('STATIC', { capacity: 50 });
    const get = (client: string, wants: number, priority: number) =>
      srv.getCapacity({ client_id: client, resource: [{ resource_id: 'r', priority, wants }] }).response[0]!.gets.capacity;
    expect(get('c1', 60, 1)).toBe(50);
    expect(get('c2', 30, 1)).toBe(30);
    expect(get('go-client', 30, 0)).toBe(30);
    const fair = server('FAIR_SHARE', { capacity: 100 }).srv;
    const f = (client: string, wants: number, priority: number) =>
      fair.getCapacity({ client_id: client, resource: [{ resource_id: 'r', priority, wants }] }).response[0]!.gets.capacity;
    expect(f('hi', 100, 9)).toBe(100);
    expect(f('hi', 50, 9)).toBe(50);
    // A priority-0 client is one more client of the same share, not a band below the priority-9 one.
    expect(f('lo', 50, 0)).toBe(50);
  });

  it('priority_bands applies to the sharing kinds only', () => {
    const bad = parseCapacityConfig(
      'r.yaml',
      'resources:\n  - identifier_glob: "*"\n    capacity: 1\n    algorithm: {kind: STATIC, lease_length: 5, refresh_interval: 1, parameters: [{name: priority_bands, value: "true"}]}\n',
    );
    expect(bad.ok).toBe(false);
  });

  it('with priority_bands: serves higher priority bands first, never over-granting the resource', () => {
    const { srv } = server('FAIR_SHARE', { extra: ', parameters: [{name: priority_bands, value: "true"}]' });
    const get = (client: string, wants: number, priority: number) =>
      srv.getCapacity({ client_id: client, resource: [{ resource_id: 'r', priority, wants }] }).response[0]!.gets.capacity;
    // Low priority clients hold everything first.
    expect(get('low1', 100, 0)).toBe(100);
    expect(get('low2', 100, 0)).toBe(20);
    // A high priority client wants 90: its band has all 120, but only what is unallocated can be granted now.
    expect(get('high', 90, 5)).toBe(0);
    // The low band shares what the high band leaves (120 − 90 = 30): 15 each, settling over their refreshes
    // (low1 first gets 10: low2 still holds 20 of the band's 30).
    expect(get('low1', 100, 0)).toBe(10);
    expect(get('low2', 100, 0)).toBe(15);
    expect(get('high', 90, 5)).toBe(90);
    expect(get('low1', 100, 0)).toBe(15);
    const res = [...srv.list()][0]!;
    expect(res.store.sumHas).toBeLessThanOrEqual(120);
  });
});

describe('a grant is always a finite number ≥ 0', () => {
  it('even when the capacity itself is not (a parent answering NaN or Infinity)', () => {
    for (const [capacity, kind] of [
      [NaN, 'STATIC'],
      [NaN, 'FAIR_SHARE'],
      [NaN, 'PROPORTIONAL_SHARE'],
      [Infinity, 'FAIR_SHARE'],
    ] as const) {
      const cfg = parseCapacityConfig(
        'r.yaml',
        `resources:\n  - identifier_glob: "*"\n    capacity: 10\n    algorithm: {kind: ${kind}, lease_length: 60, refresh_interval: 5, learning_mode_duration: 0}\n`,
      );
      if (!cfg.ok) throw new Error(cfg.errors.join('\n'));
      const clock = new FakeClock(1_700_000_000_000);
      const srv = new CapacityServer({ clock, config: () => cfg.config, address: () => 'x', stateSinceMs: clock.nowMs(), capacityOf: () => capacity });
      const got = srv.getCapacity({ client_id: 'a', resource: [{ resource_id: 'r', priority: 1, wants: 7 }] }).response[0]!.gets.capacity;
      expect(Number.isFinite(got), `${kind} on ${capacity}: ${got} is finite`).toBe(true);
      expect(got, `${kind} on ${capacity}`).toBeGreaterThanOrEqual(0);
      expect(Number.isFinite(srv.find('r')!.store.sumHas)).toBe(true);
    }
  });
});
