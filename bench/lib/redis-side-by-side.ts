/**
 * The Redis comparison: this service and envoyproxy/ratelimit, each on a redis-server of its own, driven
 * by the same closed-loop load (h2load -c50 -m10, a bounded count) with 1 and 3 descriptors, rounds
 * alternated. Per request: req/s, each server's CPU and its Redis's CPU (process trees from /proc); then
 * the ratios to the reference, the marginal CPU of a descriptor, and p99 at a fixed rate.
 */
import type { LoadResult } from './h2load.js';
import { h2load } from './h2load.js';
import { treeCpuSeconds } from './proc-cpu.js';
import { median } from './stats.js';

export interface SideTarget {
  readonly key: string;
  readonly label: string;
  readonly address: string;
  readonly pid: number | undefined;
  /** Its own redis-server's pid. */
  readonly redisPid: number | undefined;
}

export interface SideSample {
  readonly rps: number;
  readonly cpuUs: number;
  readonly redisCpuUs: number;
  readonly p99: number;
  readonly ok: number;
  readonly sent: number;
}

export interface SideSpec {
  readonly bodies: Record<string, Uint8Array>;
  readonly requests: number;
  readonly clients: number;
  readonly streams: number;
  readonly rounds: number;
  readonly dir: string;
}

/** samples[target key][shape] = one sample per round. */
export type SideSamples = Map<string, Map<string, SideSample[]>>;

async function measure(t: SideTarget, body: Uint8Array, spec: SideSpec, rps?: number): Promise<SideSample> {
  const cpu0 = treeCpuSeconds(t.pid);
  const redis0 = treeCpuSeconds(t.redisPid);
  const requests = rps === undefined ? spec.requests : Math.round(spec.requests / spec.clients);
  const res: LoadResult = await h2load({
    address: t.address,
    body,
    requests,
    clients: spec.clients,
    streams: spec.streams,
    dir: spec.dir,
    ...(rps === undefined ? {} : { rps }),
  });
  const per = (s: number) => (s * 1e6) / Math.max(1, res.ok);
  return {
    rps: res.rps,
    cpuUs: per(treeCpuSeconds(t.pid) - cpu0),
    redisCpuUs: per(treeCpuSeconds(t.redisPid) - redis0),
    p99: res.p99,
    ok: res.ok,
    sent: res.sent,
  };
}

/** Warm every target up, then `rounds` rounds, the order of the targets reversed every other round. */
export async function sideBySide(targets: readonly SideTarget[], spec: SideSpec, rps?: number): Promise<SideSamples> {
  const out: SideSamples = new Map(targets.map((t) => [t.key, new Map<string, SideSample[]>()]));
  for (const t of targets)
    for (const body of Object.values(spec.bodies))
      await h2load({ address: t.address, body, requests: Math.min(spec.requests, 5000), clients: spec.clients, streams: spec.streams, dir: spec.dir });
  for (let r = 0; r < spec.rounds; r++) {
    const order = r % 2 === 0 ? targets : [...targets].reverse();
    for (const t of order) {
      for (const [shape, body] of Object.entries(spec.bodies)) {
        const s = await measure(t, body, spec, rps);
        const m = out.get(t.key)!;
        m.set(shape, [...(m.get(shape) ?? []), s]);
      }
    }
  }
  return out;
}

/** Per-round ratios a/b of one figure (same round, same shape), for "median (range)". */
export function ratios(a: readonly SideSample[], b: readonly SideSample[], pick: (s: SideSample) => number): number[] {
  return a.map((x, i) => pick(x) / pick(b[i]!));
}

/** CPU of one more descriptor: (CPU with 3 − CPU with 1) / 2, per round, medians. */
export function marginal(one: readonly SideSample[], three: readonly SideSample[], pick: (s: SideSample) => number): number {
  return median(one.map((x, i) => (pick(three[i]!) - pick(x)) / 2));
}
