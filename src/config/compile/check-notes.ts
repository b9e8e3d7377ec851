/**
 * What `ratelimit check` adds to a valid rule set, read at an instant (now, or `check --at`): rules that have ended or end soon
 * (`valid_until`), and rules counted per client-chosen value with no `max_values`, where a client choosing random
 * values creates a counter per request.
 */
import type { ConfigDescription } from './describe-rules.js';
import { ruleTiming } from './rules-in-force.js';

/** A rule ending within this long is reported as ending soon. */
export const ENDS_SOON_MS = 7 * 86_400_000;

/** How long until an end, rounded down to whole days (from 2 days), hours (from 1 hour) or minutes (at least 1). */
function span(ms: number): string {
  const count = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  const h = Math.floor(ms / 3_600_000);
  return h >= 48 ? count(Math.floor(h / 24), 'day') : h >= 1 ? count(h, 'hour') : count(Math.max(1, Math.floor(ms / 60_000)), 'minute');
}

export function checkNotes(domains: ConfigDescription, nowMs: number): string[] {
  const notes: string[] = [];
  for (const d of domains) {
    for (const r of d.rules) {
      const timing = ruleTiming(r, nowMs);
      if (timing === 'ended')
        notes.push(`${r.source}: rule '${r.stats_key}' ended at ${r.valid_until} (valid_until) and decides nothing; remove it or move valid_until`);
      else if (timing === 'in_force' && r.valid_until !== undefined && Date.parse(r.valid_until) - nowMs <= ENDS_SOON_MS)
        notes.push(`${r.source}: rule '${r.stats_key}' ends in ${span(Date.parse(r.valid_until) - nowMs)}, at ${r.valid_until} (valid_until)`);
      const open = r.descriptor.find((e) => e.value === undefined || (e.value.includes('*') && !r.share_threshold));
      if (timing !== 'ended' && open !== undefined && !r.unlimited && r.limits.some((l) => l.max_values === undefined))
        notes.push(
          `${r.source}: rule '${r.stats_key}' keeps a counter per value of '${open.key}', which the client chooses; bound them with max_values (e.g. max_values: 100000, the distinct clients you expect per window with room to spare; past it new values share one overflow counter)`,
        );
    }
  }
  return notes;
}
