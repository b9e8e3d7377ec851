/**
 * Calendar windows: the day, ISO week (Monday first), month or year holding an instant, in an IANA time zone,
 * as epoch milliseconds [startMs, endMs). Daylight saving time and month lengths come from the zone's rules as
 * the runtime's Intl knows them: a day is 23, 24 or 25 hours long, a month 28 to 31 days.
 *
 * A window starts at the first instant of its first local day: local midnight, or, where the zone skips
 * midnight (a DST change at 00:00), the first instant after the gap; where midnight occurs twice, the first.
 * Pure functions of the instant; the formatter of a zone is built once and kept.
 */

export const CALENDAR_PERIODS = ['day', 'week', 'month', 'year'] as const;
export type CalendarPeriod = (typeof CALENDAR_PERIODS)[number];

export interface CalendarSpec {
  readonly period: CalendarPeriod;
  /** An IANA zone name ('UTC', 'Europe/Berlin'); checked with isTimeZone at load. */
  readonly timeZone: string;
}

export interface CalendarWindow {
  readonly startMs: number;
  readonly endMs: number;
}

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** True when the runtime knows `name` as a time zone. */
export function isTimeZone(name: string): boolean {
  if (name === '') return false;
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

/** The local wall clock at `ms` in `zone`, read as if it were UTC (epoch ms, whole seconds). */
function wallClock(zone: string, ms: number): number {
  const parts = formatter(zone).formatToParts(new Date(ms));
  const get = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
}

/** The zone's offset from UTC at `ms`, in ms (Berlin in summer: +7 200 000). */
function offsetAt(zone: string, ms: number): number {
  const whole = ms - (((ms % 1000) + 1000) % 1000);
  return wallClock(zone, whole) - whole;
}

/** The first instant whose local date is the date of `localMidnight` (a UTC-read wall clock at 00:00). */
function zonedStartOfDay(zone: string, localMidnight: number): number {
  const before = offsetAt(zone, localMidnight - 1.5 * DAY_MS);
  const after = offsetAt(zone, localMidnight + 1.5 * DAY_MS);
  let best: number | undefined;
  for (const offset of before === after ? [before] : [before, after]) {
    const t = localMidnight - offset;
    if (offsetAt(zone, t) === offset && (best === undefined || t < best)) best = t;
  }
  if (best !== undefined) return best;
  // Midnight falls in a gap: the day starts at the first instant whose wall clock is past midnight.
  let lo = localMidnight - Math.max(before, after);
  let hi = localMidnight - Math.min(before, after);
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
    if (wallClock(zone, mid) >= localMidnight) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** The local date (UTC-read midnight) at which the period holding the local date `day` starts, and the next one. */
function periodDates(period: CalendarPeriod, day: Date): { first: number; next: number } {
  const y = day.getUTCFullYear();
  const m = day.getUTCMonth();
  switch (period) {
    case 'day':
      return { first: Date.UTC(y, m, day.getUTCDate()), next: Date.UTC(y, m, day.getUTCDate() + 1) };
    case 'week': {
      const sinceMonday = (day.getUTCDay() + 6) % 7;
      return { first: Date.UTC(y, m, day.getUTCDate() - sinceMonday), next: Date.UTC(y, m, day.getUTCDate() - sinceMonday + 7) };
    }
    case 'month':
      return { first: Date.UTC(y, m, 1), next: Date.UTC(y, m + 1, 1) };
    case 'year':
      return { first: Date.UTC(y, 0, 1), next: Date.UTC(y + 1, 0, 1) };
  }
}

/** The calendar window of `spec` holding the instant `nowMs`. */
export function calendarWindow(spec: CalendarSpec, nowMs: number): CalendarWindow {
  const local = wallClock(spec.timeZone, nowMs - (((nowMs % 1000) + 1000) % 1000));
  const { first, next } = periodDates(spec.period, new Date(local));
  const startMs = zonedStartOfDay(spec.timeZone, first);
  const endMs = zonedStartOfDay(spec.timeZone, next);
  // A zone that falls back across midnight shows the previous date again after the next period began: the
  // instant belongs to the period that began, so that windows never overlap.
  if (nowMs >= endMs) return { startMs: endMs, endMs: zonedStartOfDay(spec.timeZone, periodDates(spec.period, new Date(next)).next) };
  return { startMs, endMs };
}

/**
 * The window of `spec` holding `nowMs`, remembered between calls: the zone is consulted only when the clock
 * leaves the remembered window, so a decision costs two comparisons.
 */
export class CalendarClock {
  private window: CalendarWindow = { startMs: 0, endMs: 0 };

  constructor(readonly spec: CalendarSpec) {}

  at(nowMs: number): CalendarWindow {
    const w = this.window;
    if (nowMs >= w.startMs && nowMs < w.endMs) return w;
    return (this.window = calendarWindow(this.spec, nowMs));
  }
}
