/**
 * How much of a resource one client gets: Doorman's four algorithms, computed as its server computes them
 * (checked round by round against the real server in test/integration/capacity-doorman.test.ts),
 * plus FAIR_SHARE_MAXMIN, a true max-min (water-filling) share. Pure: the resource's totals and index come in,
 * the grant goes out; the caller records it. Every grant is at most what is unallocated (`avail`), so a new
 * split settles over a few refreshes instead of ever over-granting.
 *
 * Cost per decision: O(log n) in the clients of the resource (ShareIndex), plus, in FAIR_SHARE's second round,
 * O(m) in the clients with more than one subclient (intermediate servers): that round compares wants with a
 * level rather than wants per subclient, so those few are walked; the clients with one subclient never are.
 */
import type { AlgorithmKind } from './config.js';
import type { ShareIndex } from './share-index.js';

/** What the algorithm knows about a resource: its current (unexpired) leases, with this client's old one in them. */
export interface ShareView {
  /** Σ subclients over the leases. */
  readonly count: number;
  readonly sumHas: number;
  readonly sumWants: number;
  /** The leases ordered by wants per subclient. */
  readonly index: ShareIndex;
  /** The leases whose holder has more than one subclient (intermediate servers), by client. */
  readonly multis: ReadonlyMap<string, { readonly wants: number; readonly subclients: number }>;
  /** This client's current lease, if any. */
  readonly old: { readonly has: number; readonly wants: number; readonly subclients: number } | undefined;
}

export interface ShareRequest {
  readonly client: string;
  readonly wants: number;
  readonly subclients: number;
}

/** The capacity granted to `req` by `kind` on a resource of `capacity` (≥ 0, ≤ what is unallocated). */
export function decideShare(kind: AlgorithmKind, capacity: number, view: ShareView, req: ShareRequest): number {
  switch (kind) {
    case 'NO_ALGORITHM':
      return req.wants;
    case 'STATIC':
      return Math.min(capacity, req.wants);
    case 'PROPORTIONAL_SHARE':
      return proportional(capacity, view, req);
    case 'FAIR_SHARE':
      return fair(capacity, view, req);
    case 'FAIR_SHARE_MAXMIN':
      return maxMin(capacity, view, req);
  }
}

/** What is unallocated, counting this client's own current grant as free. */
export function available(capacity: number, view: ShareView): number {
  return capacity - view.sumHas + (view.old?.has ?? 0);
}

/**
 * The subclient count a decision divides by. Doorman's two sharing algorithms differ here, and we follow each:
 * FAIR_SHARE puts this client's new subclients in place of its old ones; PROPORTIONAL_SHARE adds them only
 * for a new client and keeps the old count for a known one (checked against the real server).
 */
function countFair(view: ShareView, req: ShareRequest): number {
  return view.count - (view.old?.subclients ?? 0) + req.subclients;
}

function countProportional(view: ShareView, req: ShareRequest): number {
  return view.old === undefined ? view.count + req.subclients : view.count;
}

function nonNegative(x: number): number {
  return x > 0 ? x : 0;
}

/** Sums over the OTHER clients with wants per subclient below x (this client's old lease taken out). */
function othersBelow(view: ShareView, x: number, orEqual = false): { n: number; s: number; w: number } {
  const b = view.index.below(x, orEqual);
  const old = view.old;
  if (old !== undefined) {
    const r = old.wants / old.subclients;
    if (r < x || (orEqual && r === x)) return { n: b.n - 1, s: b.s - old.subclients, w: b.w - old.wants };
  }
  return b;
}

function othersTotal(view: ShareView): { n: number; s: number; w: number } {
  const t = view.index.total();
  const old = view.old;
  return old === undefined ? t : { n: t.n - 1, s: t.s - old.subclients, w: t.w - old.wants };
}

function proportional(capacity: number, view: ShareView, req: ShareRequest): number {
  const avail = available(capacity, view);
  const eq = capacity / countProportional(view, req);
  const mine = eq * req.subclients;
  if (view.sumWants <= capacity || req.wants <= mine) return nonNegative(Math.min(req.wants, avail));
  // Spare of the clients below their equal share, need of those above it; this client with its new wants,
  // counted only when it already holds a lease (as Doorman walks its lease store).
  const below = othersBelow(view, eq);
  const all = othersTotal(view);
  let spare = eq * below.s - below.w;
  let need = all.w - below.w - eq * (all.s - below.s);
  if (view.old !== undefined) {
    if (req.wants < mine) spare += mine - req.wants;
    else need += req.wants - mine;
  }
  const ratio = need > 0 ? spare / need : 0;
  return nonNegative(Math.min(mine + (req.wants - mine) * ratio, avail));
}

function fair(capacity: number, view: ShareView, req: ShareRequest): number {
  const avail = available(capacity, view);
  const eq = capacity / countFair(view, req);
  const d = eq * req.subclients;
  if (req.wants <= d) return nonNegative(Math.min(req.wants, avail));
  // Round 1: what the others below their equal share leave, split over the subclients that want more. A client
  // exactly at its equal share (or, in round 2, exactly at the level) neither gives nor takes, as in Doorman.
  const below = othersBelow(view, eq);
  const atOrBelow = othersBelow(view, eq, true);
  const others = othersTotal(view);
  const extra = eq * below.s - below.w;
  const wanting = req.subclients + (others.s - atOrBelow.s);
  const dX = (extra / wanting) * req.subclients;
  const level = d + dX;
  if (req.wants < level) return nonNegative(Math.min(req.wants, avail));
  // Round 2: of the others above the equal share, those wanting less than this level leave the difference, and
  // those wanting more share it. For a client with one subclient wants and wants per subclient (the index's
  // order) are the same number, so its part comes from index sums; the few with several subclients
  // (intermediate servers, view.multis) are taken out of those sums and walked: O(log n + m).
  const under = othersBelow(view, level);
  const atOrUnder = othersBelow(view, level, true);
  let between = under.n - atOrBelow.n; // others with eq < r < level
  let betweenWants = under.w - atOrBelow.w;
  let aboveLevel = others.s - atOrUnder.s; // their subclients, r > level
  let xx = 0;
  let wanting2 = req.subclients;
  for (const [id, l] of view.multis) {
    if (id === req.client) continue;
    const r = l.wants / l.subclients;
    if (r > eq && r < level) {
      between--;
      betweenWants -= l.wants;
    } else if (r > level) aboveLevel -= l.subclients;
    if (l.wants <= eq * l.subclients) continue;
    if (l.wants < level) xx += level - l.wants;
    else if (l.wants > level) wanting2 += l.subclients;
  }
  xx += level * between - betweenWants;
  wanting2 += aboveLevel;
  return nonNegative(Math.min(level + (xx / wanting2) * req.subclients, avail));
}

/**
 * FAIR_SHARE_MAXMIN: the water level λ with Σ min(w_i, λ·s_i) = C over all clients (this one with its new
 * wants); this client gets min(w, λ·s), at most what is unallocated. Unlike FAIR_SHARE it keeps redistributing
 * until no client below the level has anything left to give.
 */
function maxMin(capacity: number, view: ShareView, req: ShareRequest): number {
  const avail = available(capacity, view);
  const old = view.old;
  const index = view.index;
  if (old !== undefined) index.remove(req.client, old.wants, old.subclients);
  index.insert(req.client, req.wants, req.subclients);
  const level = index.waterLevel(capacity);
  index.remove(req.client, req.wants, req.subclients);
  if (old !== undefined) index.insert(req.client, old.wants, old.subclients, old.has);
  return nonNegative(Math.min(req.wants, level * req.subclients, avail));
}
