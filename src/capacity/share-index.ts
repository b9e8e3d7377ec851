/**
 * The clients of one resource ordered by wants per subclient (r = wants ÷ subclients), with subtree sums of
 * subclients and wants: a treap, so that insert, remove and "sums over clients with r below x" cost O(log n).
 * FAIR_SHARE and PROPORTIONAL_SHARE need exactly those sums (spare below the equal share, need above it), and
 * the water-filling level of FAIR_SHARE_MAXMIN is found by one descent. Priorities are a hash of the client id,
 * so the shape depends on the data only and no random source is needed.
 */

interface Node {
  r: number;
  id: string;
  prio: number;
  s: number;
  w: number;
  /** The client's grant (has): only summed, never ordered by. */
  h: number;
  left: Node | undefined;
  right: Node | undefined;
  n: number;
  sumS: number;
  sumW: number;
  sumH: number;
}

/** Sums over a set of clients. */
export interface Sums {
  /** Clients. */
  readonly n: number;
  /** Their subclients. */
  readonly s: number;
  /** Their wants. */
  readonly w: number;
}

function hash(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return h >>> 0;
}

function pull(t: Node): void {
  const l = t.left;
  const r = t.right;
  t.n = 1 + (l?.n ?? 0) + (r?.n ?? 0);
  t.sumS = t.s + (l?.sumS ?? 0) + (r?.sumS ?? 0);
  t.sumW = t.w + (l?.sumW ?? 0) + (r?.sumW ?? 0);
  t.sumH = t.h + (l?.sumH ?? 0) + (r?.sumH ?? 0);
}

function less(r: number, id: string, t: Node): boolean {
  return r < t.r || (r === t.r && id < t.id);
}

/** Splits t into (keys < (r, id)) and (keys ≥ (r, id)). */
function split(t: Node | undefined, r: number, id: string): [Node | undefined, Node | undefined] {
  if (t === undefined) return [undefined, undefined];
  if (less(r, id, t) || (r === t.r && id === t.id)) {
    const [a, b] = split(t.left, r, id);
    t.left = b;
    pull(t);
    return [a, t];
  }
  const [a, b] = split(t.right, r, id);
  t.right = a;
  pull(t);
  return [t, b];
}

function merge(a: Node | undefined, b: Node | undefined): Node | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (a.prio > b.prio) {
    a.right = merge(a.right, b);
    pull(a);
    return a;
  }
  b.left = merge(a, b.left);
  pull(b);
  return b;
}

export class ShareIndex {
  private root: Node | undefined;

  get size(): number {
    return this.root?.n ?? 0;
  }

  /** Σ subclients, Σ wants and Σ has over all clients: recomputed from the nodes on every change, so they never drift. */
  get sumS(): number {
    return this.root?.sumS ?? 0;
  }

  get sumW(): number {
    return this.root?.sumW ?? 0;
  }

  get sumH(): number {
    return this.root?.sumH ?? 0;
  }

  /** Adds a client (its id must not be in the index). */
  insert(id: string, wants: number, subclients: number, has = 0): void {
    const node: Node = {
      r: wants / subclients,
      id,
      prio: hash(id),
      s: subclients,
      w: wants,
      h: has,
      left: undefined,
      right: undefined,
      n: 1,
      sumS: subclients,
      sumW: wants,
      sumH: has,
    };
    const [a, b] = split(this.root, node.r, id);
    this.root = merge(merge(a, node), b);
  }

  /** Removes a client that was inserted with these wants and subclients. */
  remove(id: string, wants: number, subclients: number): void {
    const r = wants / subclients;
    const [a, rest] = split(this.root, r, id);
    // rest starts with the node itself; drop its leftmost node.
    this.root = merge(a, dropFirst(rest));
  }

  /** Sets the has of a client that is in the index with these wants and subclients (its place is unchanged). */
  setHas(id: string, wants: number, subclients: number, has: number): void {
    setHas(this.root, wants / subclients, id, has);
  }

  /** Sums over the clients with r < x (strict), or r ≤ x with `orEqual`. Iterative: O(depth). */
  below(x: number, orEqual = false): Sums {
    let n = 0;
    let s = 0;
    let w = 0;
    let t = this.root;
    while (t !== undefined) {
      if (t.r < x || (orEqual && t.r === x)) {
        n += 1 + (t.left?.n ?? 0);
        s += t.s + (t.left?.sumS ?? 0);
        w += t.w + (t.left?.sumW ?? 0);
        t = t.right;
      } else t = t.left;
    }
    return { n, s, w };
  }

  /** All clients' sums. */
  total(): Sums {
    const t = this.root;
    return { n: t?.n ?? 0, s: t?.sumS ?? 0, w: t?.sumW ?? 0 };
  }

  /**
   * The water level λ at which Σ min(w_i, λ·s_i) = capacity (max-min fairness per subclient); Infinity when
   * all wants fit. One descent: at each node, the clients with r < node.r are filled to their wants and the
   * rest stand at λ.
   */
  waterLevel(capacity: number): number {
    const all = this.total();
    if (all.w <= capacity) return Infinity;
    // Accumulated sums of the clients known to be below the current subtree.
    let accW = 0;
    let accS = 0;
    let t = this.root;
    let best = 0;
    while (t !== undefined) {
      const leftW = accW + (t.left?.sumW ?? 0);
      const leftS = accS + (t.left?.sumS ?? 0);
      // Use at level t.r: the clients ordered before t filled, t and those after it at t.r per subclient.
      if (leftW + t.r * (all.s - leftS) <= capacity) {
        accW = leftW + t.w;
        accS = leftS + t.s;
        const restS = all.s - accS;
        best = restS > 0 ? (capacity - accW) / restS : Infinity;
        t = t.right;
      } else {
        best = (capacity - leftW) / (all.s - leftS);
        t = t.left;
      }
    }
    return best;
  }

  /** Visits every client (for the O(n) paths and for listing). */
  forEach(visit: (id: string, wants: number, subclients: number) => void): void {
    const stack: Node[] = [];
    let t = this.root;
    while (t !== undefined || stack.length > 0) {
      while (t !== undefined) {
        stack.push(t);
        t = t.left;
      }
      const node = stack.pop()!;
      visit(node.id, node.w, node.s);
      t = node.right;
    }
  }
}

function setHas(t: Node | undefined, r: number, id: string, has: number): boolean {
  if (t === undefined) return false;
  if (r === t.r && id === t.id) t.h = has;
  else if (!setHas(less(r, id, t) ? t.left : t.right, r, id, has)) return false;
  pull(t);
  return true;
}

function dropFirst(t: Node | undefined): Node | undefined {
  if (t === undefined) return undefined;
  if (t.left === undefined) return t.right;
  t.left = dropFirst(t.left);
  pull(t);
  return t;
}
