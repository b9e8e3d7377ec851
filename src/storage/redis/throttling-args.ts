/**
 * The throttling part of a check's packed fields and of the reply (lua/throttling/step.lua has the layout):
 * seven numbers per check after its six ordinary ones, the ban and aggregate keys appended to the request's
 * KEYS (each distinct key once, see KeyIndex), and one flags integer per check at the end of the reply.
 */
import type { LimitCheck, LimitOutcome } from '../counter-store.js';
import { algorithmId } from './algorithm-ids.js';
import { stateKey } from './state-key.js';

export const THROTTLING_FIELDS = 7;
const BORROWED = 1;
const BANNED = 2;
const BAN_STARTED = 4;
const NEEDS_AGGREGATE = 8;

/** Appends keys to a request's KEYS once each and gives their 1-based index (0 is "no key" in the fields). */
export class KeyIndex {
  private readonly index = new Map<string, number>();
  constructor(readonly keys: string[]) {}
  indexOf(key: string): number {
    let i = this.index.get(key);
    if (i === undefined) {
      this.keys.push(key);
      i = this.keys.length;
      this.index.set(key, i);
    }
    return i;
  }
}

/** Writes check `c`'s seven throttling numbers at `at` of `out`; the keys they name go to `keys`. */
export function throttlingFields(c: LimitCheck, keys: KeyIndex, out: Float64Array, at: number): void {
  const e = c.elastic;
  out[at] = e?.max ?? 0;
  out[at + 1] = e?.capacity ?? 0;
  out[at + 2] = e === undefined || e.use !== undefined ? 0 : keys.indexOf(stateKey(e.key, e.algorithm ?? c.algorithm));
  out[at + 3] = e?.use === 'ask' ? -2 : (e?.use ?? -1);
  out[at + 4] = c.ban?.ms ?? 0;
  out[at + 5] = c.ban === undefined ? 0 : keys.indexOf(c.ban.key);
  out[at + 6] = e?.algorithm === undefined ? 0 : algorithmId(e.algorithm);
}

export function decodeThrottlingFlags(flags: number): Pick<LimitOutcome, 'borrowed' | 'ban' | 'needsAggregate'> {
  if (flags === 0) return {};
  if (flags === NEEDS_AGGREGATE) return { needsAggregate: true };
  return {
    ...((flags & BORROWED) !== 0 ? { borrowed: true } : {}),
    ...((flags & BANNED) !== 0 ? { ban: 'active' as const } : (flags & BAN_STARTED) !== 0 ? { ban: 'started' as const } : {}),
  };
}
