/**
 * `lease: {size: 5% | 50, ttl: 1s}` of a rate_limit (quota leases, src/lease/): validation and
 * compilation to a LeaseSpec. Defaults: size 5%, ttl 1s. Only fixed_window, sliding_window_counter and
 * token_bucket have units a replica can hold; the others say why not.
 */
import { isScalar } from 'yaml';
import type { AlgorithmName } from '../../vocab/algorithm-names.js';
import { isLeaseAlgorithm, type LeaseSpec } from '../../algorithms/lease-support.js';
import { join, readFields, readMap, valueNode, type Field } from './fields.js';
import { describeNode, scalarKind, type FileContext } from './yaml-nodes.js';

export const LEASE_KEYS = ['size', 'ttl'] as const;
const DEFAULT_PERCENT = 5;
const DEFAULT_TTL_MS = 1000;
/** A lease kept longer than this holds units from every other replica for no gain. */
export const MAX_LEASE_TTL_MS = 3_600_000;
const MAX_SIZE = 4_294_967_295;

const REFUSAL: Readonly<Partial<Record<AlgorithmName, string>>> = {
  sliding_window_log:
    'sliding_window_log records the time of every admitted hit, and leased units are counted when claimed, not when used, so it would stop being exact (use sliding_window_counter)',
  leaky_bucket: 'leaky_bucket spaces requests evenly, and a replica holding leased units would admit them in a burst (use token_bucket)',
};

const TTL = /^([0-9]+)(ms|s|m|h)$/;
const TTL_UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PERCENT = /^([0-9]+(?:\.[0-9]+)?)%$/;

/** The lease of one limit; undefined when absent (or invalid: then an error was reported). */
export function readLease(ctx: FileContext, field: Field | undefined, path: string, algorithm: AlgorithmName, requestsPerUnit: number): LeaseSpec | undefined {
  if (field === undefined) return undefined;
  const leasePath = join(path, 'lease');
  const map = readMap(ctx, field, leasePath);
  if (map === undefined) return undefined;
  if (!isLeaseAlgorithm(algorithm)) {
    ctx.error(field.key, leasePath, `lease is not available with ${algorithm}: ${REFUSAL[algorithm] ?? 'it has no units to lease'}`);
    return undefined;
  }
  const fields = map === null ? new Map<string, Field>() : readFields(ctx, map, leasePath, LEASE_KEYS);
  const size = readSize(ctx, fields.get('size'), join(leasePath, 'size'), requestsPerUnit);
  const ttlMs = readTtl(ctx, fields.get('ttl'), join(leasePath, 'ttl'));
  if (size === undefined || ttlMs === undefined) return undefined;
  return { size, ttlMs };
}

/** `size`: a count (integer >= 1) or a percentage of requests_per_unit in (0%, 100%], at least 1 unit. */
function readSize(ctx: FileContext, field: Field | undefined, path: string, requestsPerUnit: number): number | undefined {
  const ofLimit = (percent: number) => Math.max(1, Math.floor((requestsPerUnit * percent) / 100));
  if (field === undefined) return ofLimit(DEFAULT_PERCENT);
  const node = valueNode(ctx, field);
  const bad = () => {
    ctx.error(
      node,
      path,
      `must be a count from 1 to ${MAX_SIZE} (e.g. 50) or a percentage of requests_per_unit above 0% and at most 100% (e.g. 5%), not ${isScalar(node) ? `'${String(node.value)}'` : describeNode(node)}`,
    );
    return undefined;
  };
  if (!isScalar(node)) return bad();
  const kind = scalarKind(node);
  const text = String(node.value).trim();
  if (kind === 'int') {
    const n = Number(text);
    return Number.isSafeInteger(n) && n >= 1 && n <= MAX_SIZE ? n : bad();
  }
  const m = PERCENT.exec(text);
  if (kind !== 'string' || m === null) return bad();
  const percent = Number(m[1]);
  return percent > 0 && percent <= 100 ? ofLimit(percent) : bad();
}

/** `ttl`: an integer and a unit (ms, s, m, h), from 1ms to 1h. */
function readTtl(ctx: FileContext, field: Field | undefined, path: string): number | undefined {
  if (field === undefined) return DEFAULT_TTL_MS;
  const node = valueNode(ctx, field);
  const text = isScalar(node) ? String(node.value).trim() : '';
  const m = TTL.exec(text);
  const ms = m === null ? NaN : Number(m[1]) * TTL_UNIT_MS[m[2]!]!;
  if (!isScalar(node) || scalarKind(node) !== 'string' || !(ms >= 1 && ms <= MAX_LEASE_TTL_MS)) {
    ctx.error(node, path, `must be a duration from 1ms to 1h like 250ms, 1s or 2m, not ${isScalar(node) ? `'${String(node.value)}'` : describeNode(node)}`);
    return undefined;
  }
  return ms;
}

/** What else a limit with a lease says, as far as it matters to the lease. */
export interface BesideLease {
  readonly onLimit?: { readonly action: string; readonly retry: string };
  readonly throttling?: { readonly mode: string };
  readonly banMs?: number;
  readonly shares?: unknown;
}

/**
 * A leased check is decided from local units, never by the batch script, so the store-side parts of other
 * features cannot act on it: a ban, elastic borrowing, criticality shares (their ceiling changes per request,
 * so a lease would be given back and claimed again at each change of class), on_limit delay and degrade, and
 * exponential backoff (its count lives beside the counter in the store). Each is refused at the `lease` field
 * with the reason. Soft throttling, soft_requests_per_unit and the on_limit message (body, headers, status,
 * retry fixed | none) work with leases.
 */
export function checkBesideLease(ctx: FileContext, fields: Map<string, Field>, path: string, beside: BesideLease): void {
  const field = fields.get('lease');
  if (field === undefined) return;
  const clash: string[] = [];
  if (beside.banMs !== undefined) clash.push('ban (bans are kept in the store)');
  if (beside.throttling?.mode === 'elastic') clash.push("elastic throttling (the rule's aggregate is counted in the store)");
  if (beside.shares !== undefined) clash.push("shares (the ceiling changes with each request's class)");
  if (beside.onLimit?.action === 'delay' || beside.onLimit?.action === 'degrade')
    clash.push(`on_limit action '${beside.onLimit.action}' (decided in the store)`);
  if (beside.onLimit?.retry === 'exponential_backoff') clash.push('on_limit retry exponential_backoff (its count is kept in the store)');
  if (clash.length === 0) return;
  ctx.error(
    valueNode(ctx, field),
    join(path, 'lease'),
    `a leased limit is decided from local units, without the store, so it cannot have ${clash.join(', ')}: drop the lease or these`,
  );
}
