/**
 * sliding_window_log: exact. The log holds one entry per admitted request (its time and hit count); a hit
 * at t counts while t > now − W. Allowed iff (hits in the log) + h <= L. Entries older than W are dropped,
 * so at most L entries are live (each holds >= 1 hit).
 *
 * Entries carry the running total of hits ever logged under the key (`cums`), so the count of the live
 * part is a difference of two totals and the entry whose expiry frees enough room for a rejected request
 * is found by binary search: O(log L) per call, never a scan of the log.
 *
 * Times are made non-decreasing: a request is logged at max(now, time of the last entry). With one clock
 * this is `now`; with replicas whose clocks disagree it logs a hit slightly later (stricter), and keeps the
 * log sorted, which the Redis sorted set and the binary searches rely on.
 *
 * Purity without copying the log on every call: the arrays are shared append-only storage and a state is
 * the view [head, end) of them. A new entry is pushed in place only when nothing was pushed past `end`
 * yet (no other state derived from this one can see it); otherwise, or when the dead prefix has grown
 * larger than the live part, the live view is copied first. Amortised O(1) per call.
 */
import type { Algorithm, AlgorithmParams, Evaluation } from './types.js';

export interface SlidingWindowLogState {
  /** Shared append-only storage; only [head, end) belongs to this state. */
  readonly times: number[];
  /** Running total of hits logged under the key, up to and including each entry. */
  readonly cums: number[];
  /** Hits of each entry. */
  readonly counts: number[];
  readonly head: number;
  readonly end: number;
}

/** Compaction threshold: dead prefixes shorter than this are kept (copying them would cost more). */
const MIN_COMPACT = 64;

/** The first index i in [lo, hi) with pred(i), given pred is false then true over the range; hi if none. */
function lowerBound(lo: number, hi: number, pred: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function withEntry(state: SlidingWindowLogState | undefined, first: number, time: number, cum: number, hits: number): SlidingWindowLogState {
  if (state === undefined) return { times: [time], cums: [cum], counts: [hits], head: 0, end: 1 };
  let { times, cums, counts, end } = state;
  let head = first;
  if (times.length !== end || (head >= MIN_COMPACT && head * 2 >= end)) {
    times = times.slice(head, end);
    cums = cums.slice(head, end);
    counts = counts.slice(head, end);
    end -= head;
    head = 0;
  }
  times.push(time);
  cums.push(cum);
  counts.push(hits);
  return { times, cums, counts, head, end: end + 1 };
}

function evaluate(state: SlidingWindowLogState | undefined, nowMs: number, params: AlgorithmParams, hits: number): Evaluation<SlidingWindowLogState> {
  const { limit, windowMs } = params;
  const cutoff = nowMs - windowMs; // entries at t <= cutoff no longer count
  let first = 0;
  let end = 0;
  let count = 0;
  let lastTime = nowMs;
  let lastCum = 0;
  if (state !== undefined) {
    const { times, cums, counts } = state;
    end = state.end;
    first = lowerBound(state.head, end, (i) => times[i]! > cutoff);
    if (end > 0) lastCum = cums[end - 1]!;
    if (first < end) {
      count = lastCum - (cums[first]! - counts[first]!);
      lastTime = Math.max(nowMs, times[end - 1]!);
    }
  }
  const live = first < end;
  // Time at which every hit now live has expired (0 = nothing to wait for).
  const untilEmpty = live ? state!.times[end - 1]! + windowMs - nowMs : 0;
  const allowed = count + hits <= limit;
  const remainingIfNotCommitted = Math.max(0, limit - count);
  const remainingIfCommitted = allowed ? limit - count - hits : remainingIfNotCommitted;

  let resetMs: number;
  if (allowed) {
    resetMs = hits > 0 ? lastTime + windowMs - nowMs : untilEmpty;
  } else if (hits > limit) {
    resetMs = untilEmpty > 0 ? untilEmpty : windowMs;
  } else {
    // The oldest entries must expire until count + hits <= L: the first live entry whose running total
    // reaches base + (count + hits − L) is the last one that has to go.
    const { times, cums, counts } = state!;
    const target = cums[first]! - counts[first]! + (count + hits - limit);
    const j = lowerBound(first, end, (i) => cums[i]! >= target);
    resetMs = times[j]! + windowMs - nowMs;
  }

  if (hits === 0 || !allowed) {
    const next = state ?? { times: [], cums: [], counts: [], head: 0, end: 0 };
    return {
      outcome: { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs },
      next: state === undefined ? next : { ...next, head: first },
      ttlMs: Math.max(1, untilEmpty),
    };
  }
  return {
    outcome: { allowed, remainingIfCommitted, remainingIfNotCommitted, resetMs },
    next: withEntry(state, first, lastTime, lastCum + hits, hits),
    ttlMs: lastTime + windowMs - nowMs,
  };
}

export const slidingWindowLog: Algorithm<SlidingWindowLogState> = { name: 'sliding_window_log', evaluate };
