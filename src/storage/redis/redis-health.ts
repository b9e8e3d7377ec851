/**
 * The truth about a Redis store: connected AND deciding. A socket can be open while every script call fails
 * (an ACL user without +evalsha, a broken script, a paused server), so health follows the outcome of the real
 * calls, and a probe (the real script, evaluate-only, on one key, writing nothing) runs on every tick in
 * which no real call succeeded: when idle, and while failing, so recovery is seen within one tick.
 *
 * It also keeps Redis's clock (TIME, re-measured every tick, or every TIME_KEPT_MS while the reading is good)
 * against this process's monotonic clock, so that a caller's give-up time can be sent to the script as an
 * expiry in Redis's clock (see batch.lua ARGV[3]):
 * expiry = Redis now (last TIME + monotonic time since) + time left on the injected clock - guard. Only the
 * time left is taken from the injected clock, so a test's FakeClock and a jumping wall clock both stay right.
 */
import type { Clock } from '../../vocab/clock.js';
import type { StoreHealth } from '../counter-store.js';
import type { LogFn } from '../throttled-log.js';
import { describe, isClientReady, isTimeoutText, type RedisClient } from './connection.js';

/** Request-deadline timeouts in a row (with no success between) that make the store unhealthy. */
const TIMEOUTS_TO_FAIL = 3;
/** Added to the measured round trip when converting a give-up time to Redis's clock. */
const EXPIRY_GUARD_MS = 2;
/** A TIME measurement replaces a better one only if its round trip is at most this, or twice the old one... */
const ACCEPT_RTT_MS = 20;
/** ...or the old one is older than this (the clocks drift by parts per million, so old is still good). */
const REMEASURE_AFTER_MS = 60_000;
/** A reading as good as ACCEPT_RTT_MS is not re-taken for this long: one round trip less per tick. */
const TIME_KEPT_MS = 10_000;

/** The healthy answer, shared: health() is asked before every request (ResilientStore), so it allocates nothing then. */
const HEALTHY: StoreHealth = Object.freeze({ connected: true, healthy: true });

export interface RedisHealthOptions {
  readonly clock: Clock;
  /** Runs the script evaluate-only; rejects when it cannot. */
  readonly probe: () => Promise<void>;
  /** Tick period (default 1000 ms). */
  readonly intervalMs?: number;
  /** Called (already throttled by the caller) while the store is unhealthy, naming the cause. */
  readonly logProblem?: LogFn;
}

export class RedisHealth {
  private lastError: string | undefined;
  private connectionError: string | undefined;
  /** A real call or probe succeeded since the client became ready (a fresh connection is unproven). */
  private verified = false;
  private succeededSinceTick = false;
  private timeoutsInRow = 0;
  private probing: Promise<void> | undefined;
  private measuring = false;
  /** Redis TIME (ms) seen at monotonic instant `atPerfMs`, and the guard from that measurement. */
  private redisTime: { ms: number; atPerfMs: number; guardMs: number } | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly client: RedisClient,
    private readonly options: RedisHealthOptions,
  ) {
    client.on('error', (error: unknown) => {
      if (!isClientReady(client)) this.connectionError = describe(error);
    });
    client.on('ready', () => {
      this.connectionError = undefined;
      this.verified = false;
      void this.tick();
    });
    this.timer = setInterval(() => void this.tick(), options.intervalMs ?? 1000);
    this.timer.unref();
  }

  health(): StoreHealth {
    if (!isClientReady(this.client)) {
      return { connected: false, healthy: false, problem: `not connected${this.connectionError ? `: ${this.connectionError}` : ` (${this.client.status})`}` };
    }
    if (this.lastError !== undefined) return { connected: true, healthy: false, problem: this.lastError };
    if (!this.verified) return { connected: true, healthy: false, problem: 'connected, not yet verified by a script call' };
    return HEALTHY;
  }

  recordSuccess(): void {
    this.lastError = undefined;
    this.verified = true;
    this.succeededSinceTick = true;
    this.timeoutsInRow = 0;
  }

  /** A call failed: Redis said so (NOPERM, NOAUTH, a script error...), or the connection did. */
  recordFailure(error: unknown): void {
    this.lastError = describe(error);
  }

  /** A call was given up at the request's deadline: one is noise, several in a row are a stuck Redis. */
  recordTimeout(error: unknown): void {
    if (++this.timeoutsInRow >= TIMEOUTS_TO_FAIL) this.lastError = `${describe(error)} (${this.timeoutsInRow} calls in a row)`;
  }

  /** `localMs` (an instant on the injected clock) as Redis TIME in ms, less the guard; 0 while unknown. */
  toRedisMs(localMs: number): number {
    const t = this.redisTime;
    if (!t) return 0;
    const redisNow = t.ms + (performance.now() - t.atPerfMs);
    return Math.floor(redisNow + (localMs - this.options.clock.nowMs()) - t.guardMs);
  }

  /** Probe now (and wait for it); for start-up and tests. */
  async check(): Promise<StoreHealth> {
    await this.tick();
    return this.health();
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (!isClientReady(this.client)) {
      this.reportProblem();
      return;
    }
    void this.measureOffset();
    const needed = !this.succeededSinceTick || this.lastError !== undefined || !this.verified;
    this.succeededSinceTick = false;
    if (needed) {
      this.probing ??= this.options
        .probe()
        .then(
          () => this.recordSuccess(),
          // A slow reply (ioredis commandTimeout) counts like a request timeout: several in a row fail.
          (error: unknown) => (isTimeoutText(describe(error)) ? this.recordTimeout(error) : this.recordFailure(error)),
        )
        .finally(() => (this.probing = undefined));
      await this.probing;
    }
    this.reportProblem();
  }

  private reportProblem(): void {
    const h = this.health();
    if (!h.healthy && this.options.logProblem) this.options.logProblem(`Redis store cannot decide: ${h.problem}`);
  }

  private async measureOffset(): Promise<void> {
    const kept = this.redisTime;
    if (this.measuring || (kept !== undefined && kept.guardMs - EXPIRY_GUARD_MS <= ACCEPT_RTT_MS && performance.now() - kept.atPerfMs < TIME_KEPT_MS)) return;
    this.measuring = true;
    try {
      const p0 = performance.now();
      const [seconds, micros] = await this.client.time();
      const p1 = performance.now();
      const redisMs = Number(seconds) * 1000 + Number(micros) / 1000;
      // The reply left Redis somewhere in [p0, p1]; a script may also finish just before expiry and its reply
      // take a one-way trip back: keep the whole round trip plus a little as the guard.
      const rtt = p1 - p0;
      const old = this.redisTime;
      // A reply delayed by a paused or busy Redis would make a huge guard (every call expiring early):
      // keep the tighter measurement unless this one is as good or the old one is stale.
      if (old && rtt > Math.max(ACCEPT_RTT_MS, 2 * (old.guardMs - EXPIRY_GUARD_MS)) && p1 - old.atPerfMs < REMEASURE_AFTER_MS) return;
      this.redisTime = { ms: redisMs, atPerfMs: (p0 + p1) / 2, guardMs: rtt + EXPIRY_GUARD_MS };
    } catch (error) {
      // Keep the last measurement. A timeout is the probe's business; a refusal (an ACL without +time)
      // leaves calls without expiry, which the operator must hear about.
      const cause = describe(error);
      if (!isTimeoutText(cause)) {
        this.options.logProblem?.(`Redis TIME failed (${cause}): calls cannot expire, so a request answered by FAILURE_MODE may still be counted`);
      }
    } finally {
      this.measuring = false;
    }
  }
}
