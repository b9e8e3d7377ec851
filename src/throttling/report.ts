/**
 * What throttling tells the client and the metrics after a decision (docs/throttling.md):
 *
 * - `x-ratelimit-soft-exceeded: "<policy>";limit=100;over=5`: admitted above L by soft throttling (over =
 *   how far the count is above L after this request);
 * - `x-ratelimit-soft-warning: "<policy>";soft=80;used=85`: admitted above soft_requests_per_unit and within L;
 * - `x-ratelimit-elastic-borrowed: "<policy>";limit=100;max=300`: admitted above L on the rule's spare capacity;
 * - `x-ratelimit-banned: "<policy>";t=3540`: rejected under a ban (t = seconds until it ends), with
 *   retry-after and duration_until_reset saying the same.
 * The first three only on an admitted request; one header per kind, listing every limit concerned.
 */
import type { CompiledLimit } from '../config/types.js';
import type { HeaderValue } from '../vocab/types.js';
import type { LimitCheck, LimitOutcome } from '../storage/counter-store.js';
import type { Criticality } from '../vocab/throttling.js';

export const SOFT_EXCEEDED_HEADER = 'x-ratelimit-soft-exceeded';
export const SOFT_WARNING_HEADER = 'x-ratelimit-soft-warning';
export const ELASTIC_BORROWED_HEADER = 'x-ratelimit-elastic-borrowed';
export const BANNED_HEADER = 'x-ratelimit-banned';

/** Counts for the throttling metrics of one request (labels: domain and criticality class). */
export interface ThrottlingCounts {
  /** Hits admitted above L by soft throttling. */
  softExceeded: number;
  /** Hits admitted above soft_requests_per_unit (and within L). */
  softWarnings: number;
  /** Hits admitted above L by elastic borrowing. */
  borrowed: number;
  bansStarted: number;
  /** Limit checks rejected because a ban was live. */
  banRejections: number;
}

export interface CheckReport {
  /** The check as sent to the store (its limit is the admission ceiling A). */
  readonly check: LimitCheck;
  readonly limit: CompiledLimit;
  /** The store's outcome (remaining against A). */
  readonly outcome: LimitOutcome;
  readonly policyName: string;
}

export interface ThrottlingSignals {
  readonly headers: HeaderValue[];
  readonly counts: ThrottlingCounts;
  readonly criticality: Criticality;
}

function sf(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, '?').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function throttlingSignals(reports: readonly CheckReport[], admitted: boolean, criticality: Criticality): ThrottlingSignals | undefined {
  const soft: string[] = [];
  const warn: string[] = [];
  const borrowed: string[] = [];
  const banned: string[] = [];
  const counts: ThrottlingCounts = { softExceeded: 0, softWarnings: 0, borrowed: 0, bansStarted: 0, banRejections: 0 };
  for (const { check, limit, outcome, policyName } of reports) {
    const name = sf(policyName);
    if (outcome.ban !== undefined && check.enforce) {
      if (outcome.ban === 'started') counts.bansStarted++;
      else counts.banRejections++;
      banned.push(`${name};t=${Math.ceil(outcome.resetMs / 1000)}`);
    }
    if (!admitted || !outcome.allowed || check.hits === 0) continue;
    const L = limit.requestsPerUnit;
    if (outcome.borrowed === true) {
      counts.borrowed += check.hits;
      borrowed.push(`${name};limit=${L};max=${check.elastic?.max ?? L}`);
      continue;
    }
    // Window algorithms: the count after this request is A − remaining (A = check.limit).
    const used = check.limit - outcome.remaining;
    if (limit.throttling?.mode === 'soft' && used > L) {
      counts.softExceeded += Math.min(check.hits, used - L);
      soft.push(`${name};limit=${L};over=${used - L}`);
    } else if (limit.softRequestsPerUnit > 0 && used > limit.softRequestsPerUnit && used <= L) {
      counts.softWarnings += Math.min(check.hits, used - limit.softRequestsPerUnit);
      warn.push(`${name};soft=${limit.softRequestsPerUnit};used=${used}`);
    }
  }
  const headers: HeaderValue[] = [];
  if (soft.length > 0) headers.push({ key: SOFT_EXCEEDED_HEADER, value: soft.join(', ') });
  if (warn.length > 0) headers.push({ key: SOFT_WARNING_HEADER, value: warn.join(', ') });
  if (borrowed.length > 0) headers.push({ key: ELASTIC_BORROWED_HEADER, value: borrowed.join(', ') });
  if (banned.length > 0) headers.push({ key: BANNED_HEADER, value: banned.join(', ') });
  const any = counts.softExceeded + counts.softWarnings + counts.borrowed + counts.bansStarted + counts.banRejections > 0;
  return any || headers.length > 0 ? { headers, counts, criticality } : undefined;
}
