/**
 * `calendar:` and `time_zone:` of a limit: windows aligned to the calendar (day, ISO week, month, year) in an
 * IANA zone, instead of a fixed length from the epoch. Counted as a fixed window keyed by the calendar window's
 * start, so only fixed_window takes them: a bucket refills continuously and a sliding window looks back a fixed
 * length, neither of which a calendar boundary means anything to. The limit's `window` is the nominal length of
 * the period (month: 30 days), for the stats and the reported unit only; decisions use the window itself.
 */
import { CALENDAR_PERIODS, isTimeZone, type CalendarPeriod, type CalendarSpec } from '../../algorithms/calendar-window.js';
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { UNIT_SECONDS, type Unit } from '../../vocab/types.js';
import { join, valueNode, type Fields } from './fields.js';
import { notOneOfMessage } from './schema.js';
import { readString, type FileContext } from './yaml-nodes.js';

/** The fields a calendar limit cannot go with, and why. */
const CLASHES: readonly (readonly [string, string])[] = [
  ['unit', "'calendar' gives the window; 'unit' counts fixed lengths from the epoch"],
  ['window', "'calendar' gives the window; 'window' counts a fixed length"],
  ['unit_multiplier', "'unit_multiplier' has no meaning with 'calendar'"],
  ['lease', 'leases count fixed windows from the epoch, not calendar windows'],
  ['capacity', 'a capacity limit is a granted rate, not a calendar quota'],
];

export interface CalendarLimit {
  readonly calendar: CalendarSpec;
  readonly windowMs: number;
  readonly unit: Unit;
}

/** True when the limit has a `calendar` (its unit then comes from here, not from `unit` or `window`). */
export function hasCalendar(fields: Fields): boolean {
  return fields.has('calendar');
}

/** The calendar of a limit, or undefined when absent or invalid (errors reported, naming file:line:col). */
export function readCalendar(ctx: FileContext, fields: Fields, path: string, algorithm: AlgorithmName, elastic: boolean): CalendarLimit | undefined {
  const calendarField = fields.get('calendar');
  const zoneField = fields.get('time_zone');
  if (calendarField === undefined) {
    if (zoneField !== undefined) ctx.error(zoneField.key, join(path, 'time_zone'), "'time_zone' goes with 'calendar' (day, week, month or year)");
    return undefined;
  }
  const errorsBefore = ctx.errors.length;
  const at = join(path, 'calendar');
  const text = readString(ctx, calendarField.value, at);
  let period: CalendarPeriod | undefined;
  if (text !== undefined) {
    const lower = text.toLowerCase();
    if ((CALENDAR_PERIODS as readonly string[]).includes(lower)) period = lower as CalendarPeriod;
    else ctx.error(valueNode(ctx, calendarField), at, notOneOfMessage(text, CALENDAR_PERIODS));
  }
  let timeZone = 'UTC';
  if (zoneField !== undefined) {
    const zoneAt = join(path, 'time_zone');
    const zone = readString(ctx, zoneField.value, zoneAt);
    if (zone !== undefined && isTimeZone(zone)) timeZone = zone;
    else if (zone !== undefined)
      ctx.error(valueNode(ctx, zoneField), zoneAt, `'${zone}' is not a time zone known here (an IANA name such as Europe/Berlin, America/New_York or UTC)`);
  }
  if (algorithm !== 'fixed_window') {
    const algorithmField = fields.get('algorithm');
    ctx.error(
      algorithmField !== undefined ? valueNode(ctx, algorithmField) : valueNode(ctx, calendarField),
      algorithmField !== undefined ? join(path, 'algorithm') : at,
      `calendar windows are counted by fixed_window only, not ${algorithm} (a calendar boundary has no meaning to an algorithm that refills or looks back continuously)`,
    );
  }
  for (const [name, why] of CLASHES) {
    const f = fields.get(name);
    if (f !== undefined) ctx.error(f.key, join(path, name), `'${name}' cannot go with 'calendar': ${why}`);
  }
  if (elastic)
    ctx.error(
      valueNode(ctx, fields.get('throttling')!),
      join(path, 'throttling'),
      "elastic throttling cannot go with 'calendar': its aggregate counts fixed windows from the epoch",
    );
  if (period === undefined || ctx.errors.length > errorsBefore) return undefined;
  return { calendar: Object.freeze({ period, timeZone }), windowMs: UNIT_SECONDS[period] * 1000, unit: period };
}
