/**
 * The window a limit counts in at an instant, and the key of its counter there. Most limits count in windows of a
 * fixed length from the epoch, their key naming the length; a calendar limit (rules `calendar:`) counts in the
 * calendar window holding the instant, its key naming the window's start, which the store is told
 * (LimitCheck.windowStartMs). The zone is consulted only when the clock leaves the window last seen.
 */
import { CalendarClock } from '../../algorithms/calendar-window.js';
import type { CompiledLimit } from '../../config/types.js';
import { calendarTagKey, tagKey } from '../../vocab/keys.js';

const clocks = new WeakMap<CompiledLimit, CalendarClock>();

export interface LimitWindow {
  /** Epoch ms at which the window holding the instant starts. */
  readonly startMs: number;
  /** Its length: the limit's window, or this calendar window's (a day of 23, 24 or 25 hours; a month of 28 to 31 days). */
  readonly lengthMs: number;
  /** Set for a calendar window: the store counts in [startMs, startMs + lengthMs) rather than epoch-aligned. */
  readonly calendar: boolean;
}

export function limitWindow(limit: CompiledLimit, nowMs: number): LimitWindow {
  const spec = limit.calendar;
  if (spec === undefined) return { startMs: nowMs - (((nowMs % limit.windowMs) + limit.windowMs) % limit.windowMs), lengthMs: limit.windowMs, calendar: false };
  let clock = clocks.get(limit);
  if (clock === undefined) clocks.set(limit, (clock = new CalendarClock(spec)));
  const w = clock.at(nowMs);
  return { startMs: w.startMs, lengthMs: w.endMs - w.startMs, calendar: true };
}

/** The counter key of `limit` under the hash tag `tag` (vocab/keys.ts counterTag or overflowTag) in `window`. */
export function keyInWindow(prefix: string, tag: string, limit: CompiledLimit, window: LimitWindow): string {
  const spec = limit.calendar;
  return spec === undefined ? tagKey(prefix, tag, limit.algorithm, limit.windowMs) : calendarTagKey(prefix, tag, spec.period, spec.timeZone, window.startMs);
}
