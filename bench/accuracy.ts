/**
 * How often does sliding_window_counter (two counters and a weighted estimate) decide differently from
 * sliding_window_log (the exact answer)? Replays seeded synthetic traces, many keys and many windows each,
 * through both and prints the disagreement as a percentage of requests.
 *
 *   npx tsx bench/accuracy.ts [--keys 1000] [--windows 20] [--limit 100] [--window-ms 60000] [--seed 1]
 *
 * Two measures per trace:
 * - "same history": the counter is fed the log's admissions (what it would decide, request by request,
 *   given the true history); split into false allows and false rejects.
 * - "independent": each algorithm runs on its own decisions, as it would in production; errors compound.
 */
import { slidingWindowCounter, type SlidingWindowCounterState } from '../src/algorithms/sliding-window-counter.js';
import { slidingWindowLog, type SlidingWindowLogState } from '../src/algorithms/sliding-window-log.js';
import type { AlgorithmParams } from '../src/algorithms/types.js';
import { prng } from '../test/unit/algorithms/support.js';
import { benchArgs } from './lib/args.js';

interface Options {
  keys: number;
  windows: number;
  limit: number;
  windowMs: number;
  seed: number;
}

function readOptions(argv: readonly string[]): Options {
  const args = benchArgs('bench/accuracy.ts', { keys: 'string', windows: 'string', limit: 'string', 'window-ms': 'string', seed: 'string' }, argv);
  const positive = (name: 'keys' | 'windows' | 'limit' | 'window-ms' | 'seed', dflt: number): number => {
    const value = args.num(name, dflt);
    if (!Number.isInteger(value) || value < 1) throw new Error(`bench/accuracy.ts: --${name} wants a whole number of at least 1, got ${value}`);
    return value;
  };
  return {
    keys: positive('keys', 1_000),
    windows: positive('windows', 20),
    limit: positive('limit', 100),
    windowMs: positive('window-ms', 60_000),
    seed: positive('seed', 1),
  };
}

/** Request times (ms, sorted) of one key over `duration` ms starting at `start`. */
type TraceGenerator = (rnd: () => number, start: number, duration: number, o: Options) => number[];

/** Poisson arrivals at a rate drawn per key between 0.5 L and 1.5 L per window. */
const smooth: TraceGenerator = (rnd, start, duration, o) => {
  const perMs = ((0.5 + rnd()) * o.limit) / o.windowMs;
  return poisson(rnd, start, start + duration, perMs);
};

/** On/off: bursts at 3–10 × the limit rate lasting 2–20 % of a window, separated by quiet spells. */
const bursty: TraceGenerator = (rnd, start, duration, o) => {
  const out: number[] = [];
  let t = start;
  const end = start + duration;
  while (t < end) {
    const burstLen = Math.floor((0.02 + 0.18 * rnd()) * o.windowMs);
    const perMs = ((3 + 7 * rnd()) * o.limit) / o.windowMs;
    out.push(...poisson(rnd, t, Math.min(end, t + burstLen), perMs));
    t += burstLen + Math.floor(rnd() * 2 * o.windowMs);
  }
  return out;
};

/** Every key under its limit on average (0.2–0.8 L per window): only random clumps reach the limit. */
const under: TraceGenerator = (rnd, start, duration, o) => poisson(rnd, start, start + duration, ((0.2 + 0.6 * rnd()) * o.limit) / o.windowMs);

/** Most keys well under their limit (0.1–0.9 L), one in ten abusive (2–5 L): closer to real traffic. */
const mixed: TraceGenerator = (rnd, start, duration, o) => {
  const factor = rnd() < 0.9 ? 0.1 + 0.8 * rnd() : 2 + 3 * rnd();
  return poisson(rnd, start, start + duration, (factor * o.limit) / o.windowMs);
};

function poisson(rnd: () => number, from: number, to: number, perMs: number): number[] {
  const out: number[] = [];
  let t = from;
  for (;;) {
    t += -Math.log(1 - rnd()) / perMs;
    if (t >= to) return out;
    out.push(Math.floor(t));
  }
}

interface Tally {
  requests: number;
  logAdmitted: number;
  falseAllow: number;
  falseReject: number;
  independentDiffer: number;
  counterAdmitted: number;
}

function replay(times: readonly number[], params: AlgorithmParams, tally: Tally): void {
  let log: SlidingWindowLogState | undefined;
  let shadow: SlidingWindowCounterState | undefined; // the counter, fed the log's admissions
  let counter: SlidingWindowCounterState | undefined; // the counter on its own decisions
  let log2: SlidingWindowLogState | undefined; // the log on its own, for the independent run
  for (const now of times) {
    const l = slidingWindowLog.evaluate(log, now, params, 1);
    const s = slidingWindowCounter.evaluate(shadow, now, params, 1);
    tally.requests++;
    if (l.outcome.allowed) {
      tally.logAdmitted++;
      log = l.next;
      shadow = s.next;
      if (!s.outcome.allowed) tally.falseReject++;
    } else if (s.outcome.allowed) {
      tally.falseAllow++;
    }
    const c = slidingWindowCounter.evaluate(counter, now, params, 1);
    const l2 = slidingWindowLog.evaluate(log2, now, params, 1);
    if (c.outcome.allowed) {
      counter = c.next;
      tally.counterAdmitted++;
    }
    if (l2.outcome.allowed) log2 = l2.next;
    if (c.outcome.allowed !== l2.outcome.allowed) tally.independentDiffer++;
  }
}

const pct = (n: number, of: number): string => `${((100 * n) / Math.max(1, of)).toFixed(4)}%`;

function main(): void {
  const o = readOptions(process.argv.slice(2));
  const params: AlgorithmParams = { limit: o.limit, windowMs: o.windowMs, burst: o.limit };
  const start = 1_700_000_000_000 - (1_700_000_000_000 % o.windowMs);
  console.log(`command: npx tsx bench/accuracy.ts ${process.argv.slice(2).join(' ')}`.trimEnd());
  console.log(`parameters: keys=${o.keys} windows=${o.windows} limit=${o.limit} window-ms=${o.windowMs} seed=${o.seed}`);
  console.log('');
  console.log('| trace | requests | admitted: log | admitted: counter alone | differ, same history | false allows | false rejects | differ, independent |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const traces: Array<[string, TraceGenerator]> = [
    ['smooth', smooth],
    ['bursty', bursty],
    ['under', under],
    ['mixed', mixed],
  ];
  for (const [i, [name, generate]] of traces.entries()) {
    const random = prng(o.seed * 1_000 + i);
    const rnd = () => random.next();
    const tally: Tally = { requests: 0, logAdmitted: 0, falseAllow: 0, falseReject: 0, independentDiffer: 0, counterAdmitted: 0 };
    for (let k = 0; k < o.keys; k++) {
      // each key starts at a random offset into a window, so window phases are not all alike
      const offset = Math.floor(rnd() * o.windowMs);
      replay(generate(rnd, start + offset, o.windows * o.windowMs, o), params, tally);
    }
    const differ = tally.falseAllow + tally.falseReject;
    console.log(
      `| ${name} | ${tally.requests} | ${pct(tally.logAdmitted, tally.requests)} | ${pct(tally.counterAdmitted, tally.requests)} | ` +
        `${pct(differ, tally.requests)} | ` +
        `${pct(tally.falseAllow, tally.requests)} | ${pct(tally.falseReject, tally.requests)} | ${pct(tally.independentDiffer, tally.requests)} |`,
    );
  }
}

main();
