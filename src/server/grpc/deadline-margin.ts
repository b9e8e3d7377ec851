/**
 * How long before the caller's gRPC deadline the store must be given up on, so that the answer (from the
 * failure mode, when Redis stalls) is still written in time. A fixed 2 ms was not enough on a busy machine
 * (19–40 % of answers late under a Redis stall), because the timer that gives up fires late by
 * the event loop's lag, and writing the answer takes time too. So the margin is measured:
 *
 *   margin = max(floor, min(cap, p99 event-loop delay + p99 send delay)), rounded up to whole ms
 *
 * - event-loop delay: perf_hooks.monitorEventLoopDelay, i.e. how late a timer fires; that is exactly how
 *   late our give-up timer fires. Its p99 is taken over time, not over samples: a loop stalled 30 ms in
 *   every 200 ms yields one sample in ~15, but catches ~15 % of the timers that fall due; weighting each
 *   sample by the time it covers gives the lateness a timer that falls due at a random moment sees;
 * - send delay: from handing the answer to node:http2 until the write completed (recorded by lean/lean-call.ts).
 *
 * Both are taken per window (WINDOW_MS) and the margin uses the largest of the last WINDOWS windows, so it
 * rises within one window when the machine gets busy and decays a few seconds after it calms down.
 *
 * A delayed answer (on_limit delay) keeps a stricter margin, delayMs(): the WORST event-loop delay of those
 * windows plus the p99 send delay, on top of the margin already kept. The give-up timer above falls due only
 * when the store is slow; a delay is granted up to the deadline on every burst, so its timer falls due at the
 * edge routinely, and at p99 one answer in a hundred of those would be late. A delay is voluntary: granted
 * only when the worst lateness lately seen still meets the deadline, it is otherwise a rejection at once.
 *
 * At rest nothing is measured: the 2 ms sampling is 500 wake-ups a second. Once no call has asked for the
 * margin (forCall) for WINDOWS windows, sampling and rotation pause, keeping the (by then decayed) margin;
 * the next call resumes them.
 */
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';

export interface DeadlineMarginOptions {
  /** The least margin, ms (DEADLINE_MARGIN_MS). */
  readonly floorMs: number;
  /** The measured margin is never taken above this, ms: past it the measurement is an outlier, not a margin (default 1000). The floor still holds. */
  readonly capMs?: number;
  /** Window length, ms (default 500). */
  readonly windowMs?: number;
  /** Windows remembered (default 4). */
  readonly windows?: number;
}

const SEND_SAMPLES = 512;
const RESOLUTION_MS = 2;

export class DeadlineMargin {
  private readonly loop: ELDHistogram;
  private readonly sends = new Float64Array(SEND_SAMPLES);
  private sendCount = 0;
  private readonly history: number[] = [];
  private readonly worst: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private marginMs: number;
  private delayMarginMs: number;
  private lastCallMs = 0;
  private running = false;
  private stopped = false;

  constructor(private readonly options: DeadlineMarginOptions) {
    // A 2 ms sampling period gives ~250 samples per window: enough for a p99.
    this.loop = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.marginMs = options.floorMs;
    this.delayMarginMs = options.floorMs;
  }

  start(): this {
    this.lastCallMs = performance.now();
    this.resume();
    return this;
  }

  stop(): void {
    this.stopped = true;
    this.pause();
  }

  /** The margin to use now, ms. */
  currentMs(): number {
    return this.marginMs;
  }

  /** What a delayed answer keeps before the decision deadline besides currentMs(), ms (see above). */
  delayMs(): number {
    return this.delayMarginMs;
  }

  /** The margin for a call being answered now, ms: also keeps the measurement running (or resumes it). */
  forCall(): number {
    this.lastCallMs = performance.now();
    if (!this.running && !this.stopped && this.timer !== undefined) this.resume();
    return this.marginMs;
  }

  /** Whether the event loop is being sampled (false at rest). */
  get measuring(): boolean {
    return this.running;
  }

  private resume(): void {
    const windowMs = this.options.windowMs ?? 500;
    this.running = true;
    this.loop.enable();
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      this.rotate();
      if (performance.now() - this.lastCallMs > windowMs * (this.options.windows ?? 4)) this.pause();
    }, windowMs);
    this.timer.unref();
  }

  private pause(): void {
    this.running = false;
    this.loop.disable();
    clearInterval(this.timer);
  }

  /** One answer took this long from hand-over to written, ms. */
  recordSend(ms: number): void {
    this.sends[this.sendCount % SEND_SAMPLES] = ms;
    this.sendCount++;
  }

  /** Closes a window: its p99s join the history; the margin is recomputed. Public for tests. */
  rotate(): void {
    // monitorEventLoopDelay's resolution is a sampling period: its samples include it. Subtract it.
    const lagMs = this.loop.count > 0 ? Math.max(0, timeWeightedP99(this.loop) / 1e6 - RESOLUTION_MS) : 0;
    const maxLagMs = this.loop.count > 0 ? Math.max(0, this.loop.max / 1e6 - RESOLUTION_MS) : 0;
    this.loop.reset();
    const n = Math.min(this.sendCount, SEND_SAMPLES);
    const sendMs = n === 0 ? 0 : p99(this.sends.subarray(0, n));
    this.sendCount = 0;
    const windows = this.options.windows ?? 4;
    this.history.push(lagMs + sendMs);
    this.worst.push(maxLagMs + sendMs);
    if (this.history.length > windows) this.history.shift();
    if (this.worst.length > windows) this.worst.shift();
    const cap = this.options.capMs ?? 1000;
    this.marginMs = Math.max(this.options.floorMs, Math.min(Math.ceil(Math.max(...this.history)), cap));
    this.delayMarginMs = Math.max(this.options.floorMs, Math.min(Math.ceil(Math.max(...this.worst)), cap));
  }
}

function p99(samples: Float64Array): number {
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
}

/**
 * The delay (ns, resolution included) below which 99 % of the loop's *time* was spent: each sample covers
 * about its own delay, so it is weighted by it. Read from the histogram's percentile points (each mass
 * valued at its upper bound: conservative).
 */
function timeWeightedP99(h: ELDHistogram): number {
  const points = [...h.percentiles.entries()].sort((a, b) => a[0] - b[0]);
  const masses: [number, number][] = [];
  let previous = 0;
  for (const [p, v] of points) {
    if (p > previous) masses.push([p - previous, v]);
    previous = p;
  }
  const total = masses.reduce((sum, [m, v]) => sum + m * v, 0);
  let above = 0;
  for (let i = masses.length - 1; i >= 0; i--) {
    above += masses[i]![0] * masses[i]![1];
    if (above >= total * 0.01) return masses[i]![1];
  }
  return h.max;
}
