/**
 * A bucket id as a descriptor of the domain's rules: its entries (sorted by key) resolved as a
 * RateLimitService request's descriptor is (core/resolve.ts), and the matched rule turned into what the book
 * shares out. The most restrictive of the rule's limits (by rate) is the bucket's global limit, in requests
 * per fill interval: the limit's window when it is whole seconds (1 s, 60 s, ...), else one second.
 */
import type { CompiledConfig } from '../config/types.js';
import { resolve } from '../core/resolve.js';
import type { BucketRule } from './book.js';
import type { BucketUsage } from './rlqs-codec.js';

/** `wallMs`: the wall clock (epoch ms), which decides the rules in force (valid_from / valid_until). */
export function bucketRule(config: CompiledConfig, shadowAll: boolean, domain: string, entries: BucketUsage['entries'], wallMs: number): BucketRule {
  const r = resolve(domain, config.domains.get(domain), { entries }, 1, wallMs);
  if (r.rule === undefined || r.limits.length === 0) return { kind: 'allow' };
  let best: { perFill: number; fillS: number; rate: number } | undefined;
  for (const limit of r.limits) {
    const fillS = limit.windowMs % 1000 === 0 ? limit.windowMs / 1000 : 1;
    const perFill = Math.floor((limit.requestsPerUnit * fillS * 1000) / limit.windowMs);
    const rate = limit.requestsPerUnit / limit.windowMs;
    if (best === undefined || rate < best.rate) best = { perFill, fillS, rate };
  }
  const name = r.statsKey;
  const shadow = shadowAll || r.rule.shadowMode;
  if (best!.perFill <= 0 && !shadow) return { kind: 'deny', name };
  return { kind: 'limit', name, perFill: best!.perFill, fillS: best!.fillS, shadow };
}
