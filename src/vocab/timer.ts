/**
 * Waiting on the engine's clock (on_limit delay), injected beside the Clock at the root so that tests drive
 * time and measure a wait on the very clock the engine decides with, without sleeping.
 *
 * A wait ends early when its `signal` aborts (the caller cancelled, or its deadline passed): the timeout is
 * cleared at once, so a cancelled call leaves no timer behind, and the promise rejects with the signal's
 * reason, for the engine to release the slot the wait was for (on-limit/respond.ts).
 */
import type { Clock } from './clock.js';
import { FakeClock } from './clock.js';

/** Longest delay setTimeout takes (2^31 − 1 ms, about 24.8 days); a longer one fires after 1 ms, with a TimeoutOverflowWarning. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay setTimeout honours: at least 0, at most MAX_TIMER_MS (a deadline further away is re-checked by whoever waits, if ever). */
export function timerDelay(ms: number): number {
  return ms <= 0 ? 0 : Math.min(ms, MAX_TIMER_MS);
}

export interface Timer {
  /** Resolves once the clock reads `clockMs` or later (at once if it already does); rejects when `signal` aborts first. */
  waitUntil(clockMs: number, signal?: AbortSignal): Promise<void>;
  /** Waits not yet over (neither due nor aborted). */
  readonly pending: number;
}

/** Why a wait ended early: the signal's reason when it is an Error. */
function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('wait aborted');
}

/**
 * One wait: `arm` starts it and returns how to stop it. Settles once; an abort stops the wait and removes
 * the listener, an end removes the listener.
 */
function abortableWait(signal: AbortSignal | undefined, arm: (done: () => void) => () => void): Promise<void> {
  if (signal?.aborted === true) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      stop();
      reject(abortReason(signal!));
    };
    const stop = arm(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** setTimeout against `clock` (the system clock in production). */
export function clockTimer(clock: Clock): Timer {
  let pending = 0;
  return {
    waitUntil(clockMs, signal) {
      const ms = clockMs - clock.nowMs();
      if (ms <= 0) return Promise.resolve();
      return abortableWait(signal, (done) => {
        pending++;
        const t = setTimeout(() => {
          pending--;
          done();
        }, timerDelay(ms));
        return () => {
          pending--;
          clearTimeout(t);
        };
      });
    },
    get pending() {
      return pending;
    },
  };
}

/** A timer on a FakeClock: waits end when `advance` moves the clock to their time. For tests. */
export class FakeTimer implements Timer {
  private waits: { at: number; resolve: () => void }[] = [];

  constructor(readonly clock: FakeClock = new FakeClock()) {}

  waitUntil(clockMs: number, signal?: AbortSignal): Promise<void> {
    if (clockMs <= this.clock.nowMs()) return Promise.resolve();
    return abortableWait(signal, (resolve) => {
      const wait = { at: clockMs, resolve };
      this.waits.push(wait);
      return () => {
        this.waits = this.waits.filter((w) => w !== wait);
      };
    });
  }

  /** Waits not yet over. */
  get pending(): number {
    return this.waits.length;
  }

  /** When each pending wait ends. */
  waitsAt(): number[] {
    return this.waits.map((w) => w.at);
  }

  /** The earliest time a pending wait ends, if any. */
  nextAt(): number | undefined {
    return this.waits.length === 0 ? undefined : Math.min(...this.waits.map((w) => w.at));
  }

  /** Moves the clock on by `ms` and ends every wait that is then due. */
  advance(ms: number): void {
    this.clock.advance(ms);
    const now = this.clock.nowMs();
    const due = this.waits.filter((w) => w.at <= now);
    this.waits = this.waits.filter((w) => w.at > now);
    for (const w of due) w.resolve();
  }
}
