/**
 * How long the call being handled now may have waited unseen before this process read it.
 *
 * gRPC carries a relative timeout (`grpc-timeout`), which grpc-js turns into a deadline when it reads the
 * call's headers. While the event loop is busy (a burst of calls, GC, a slow reload), a call's bytes wait in
 * the socket, and that wait is invisible: the client's deadline is earlier than the one grpc-js computes.
 * A timer that ticks every TICK_MS records when the loop last ran its timers; a call read now arrived no
 * earlier than that turn (its bytes would have been read in it), so `now - lastTick - TICK_MS` bounds the
 * unseen wait. The answer deadline and the late-answer count are both moved earlier by it.
 */
const TICK_MS = 2;

export class LoopClock {
  private lastTick = Date.now();
  private timer: NodeJS.Timeout | undefined;

  start(): this {
    this.timer = setInterval(() => {
      this.lastTick = Date.now();
    }, TICK_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** The most a call read now may have waited before the loop could read it, ms (0 on an idle loop). */
  unseenWaitMs(now = Date.now()): number {
    return Math.max(0, now - this.lastTick - TICK_MS);
  }
}
