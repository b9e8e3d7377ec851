/**
 * Waiting on the engine's clock (on_limit delay), injected beside the Clock at the root so that tests drive
 * time and measure a wait on the very clock the engine decides with, without sleeping.
 */
import type { Clock } from './clock.js';
import { FakeClock } from './clock.js';

export interface Timer {
  /** Resolves once the clock reads `clockMs` or later (at once if it already does). */
  waitUntil(clockMs: number): Promise<void>;
}

/** setTimeout against `clock` (the system clock in production). */
export function clockTimer(clock: Clock): Timer {
  return {
    waitUntil(clockMs) {
      const ms = clockMs - clock.nowMs();
      return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
    },
  };
}

/** A timer on a FakeClock: waits end when `advance` moves the clock to their time. For tests. */
export class FakeTimer implements Timer {
  private waits: { at: number; resolve: () => void }[] = [];

  constructor(readonly clock: FakeClock = new FakeClock()) {}

  waitUntil(clockMs: number): Promise<void> {
    if (clockMs <= this.clock.nowMs()) return Promise.resolve();
    return new Promise((resolve) => this.waits.push({ at: clockMs, resolve }));
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
