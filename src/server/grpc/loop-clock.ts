/**
 * How long the call being handled now may have waited unseen before this process read it.
 *
 * gRPC carries a relative timeout (`grpc-timeout`), which the server turns into a deadline when it reads the
 * call's headers. While the event loop is busy (a burst of calls, GC, a slow reload), a call's bytes wait in
 * the socket, and that wait is invisible: the client's deadline is earlier than the one the server computes.
 * A timer that ticks every TICK_MS records when the loop last ran its timers; a call read now arrived no
 * earlier than that turn (its bytes would have been read in it), so `now - lastTick - TICK_MS` bounds the
 * unseen wait. The answer deadline and the late-answer count are both moved earlier by it.
 *
 * At rest nothing ticks (500 wake-ups a second would be most of an idle sidecar's CPU): once no call has
 * asked for IDLE_AFTER_MS, the timer stops, and the next call starts it again. That call counts no unseen
 * wait: the loop had no call to serve, so it read this one when it came.
 */
const TICK_MS = 2;
const IDLE_AFTER_MS = 1000;

export class LoopClock {
  private lastTick = Date.now();
  private lastCall = 0;
  private timer: NodeJS.Timeout | undefined;
  private started = false;

  start(): this {
    this.started = true;
    return this;
  }

  stop(): void {
    this.started = false;
    this.rest();
  }

  /** Whether the clock is ticking now (false at rest, before start and after stop). */
  get ticking(): boolean {
    return this.timer !== undefined;
  }

  /** The most a call read now may have waited before the loop could read it, ms (0 on an idle loop). */
  unseenWaitMs(now = Date.now()): number {
    this.lastCall = now;
    if (this.timer === undefined) {
      if (this.started) this.tick(now);
      return 0;
    }
    return Math.max(0, now - this.lastTick - TICK_MS);
  }

  private tick(now: number): void {
    this.lastTick = now;
    this.timer = setInterval(() => {
      this.lastTick = Date.now();
      if (this.lastTick - this.lastCall > IDLE_AFTER_MS) this.rest();
    }, TICK_MS);
    this.timer.unref();
  }

  private rest(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
