/**
 * The throttling half of the batch script's arguments and reply (lua/throttling/step.lua has the layout):
 * seven values per check after its six ordinary ones, the ban and aggregate keys appended to KEYS (each
 * distinct key once), and one flags integer per check at the end of the reply.
 */
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { stateKey } from './state-key.js';

export const THROTTLING_FIELDS = 7;
const BORROWED = 1;
const BANNED = 2;
const BAN_STARTED = 4;
const NEEDS_AGGREGATE = 8;

/** The seven throttling values of each check; appends the keys they name to `keys` (KEYS, 1-based indexes). */
export function throttlingArgs(checks: readonly LimitCheck[], keys: string[]): (number | string)[][] {
  const index = new Map<string, number>();
  const indexOf = (key: string): number => {
    let i = index.get(key);
    if (i === undefined) {
      keys.push(key);
      i = keys.length;
      index.set(key, i);
    }
    return i;
  };
  return checks.map((c) => {
    const e = c.elastic;
    const aggregate = e === undefined || e.use !== undefined ? 0 : indexOf(stateKey(e.key, e.algorithm ?? c.algorithm));
    const use = e?.use === 'ask' ? -2 : (e?.use ?? -1);
    return [e?.max ?? 0, e?.capacity ?? 0, aggregate, use, c.ban?.ms ?? 0, c.ban === undefined ? 0 : indexOf(c.ban.key), e?.algorithm ?? ''];
  });
}

export function decodeThrottlingFlags(flags: number): Pick<LimitOutcome, 'borrowed' | 'ban' | 'needsAggregate'> {
  if (flags === 0) return {};
  if (flags === NEEDS_AGGREGATE) return { needsAggregate: true };
  return {
    ...((flags & BORROWED) !== 0 ? { borrowed: true } : {}),
    ...((flags & BANNED) !== 0 ? { ban: 'active' as const } : (flags & BAN_STARTED) !== 0 ? { ban: 'started' as const } : {}),
  };
}
