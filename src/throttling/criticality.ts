/**
 * Request criticality (docs/throttling.md): descriptor entries keyed CRITICALITY_KEY are taken out of every
 * descriptor before matching and counting; the first one (in descriptor and entry order) names the request's
 * class, `critical`, `default` or `sheddable` in any case. Missing or unknown means `default`.
 */
import type { RateLimitRequest } from '../vocab/types.js';
import type { Criticality } from '../vocab/throttling.js';

export const DEFAULT_CRITICALITY_KEY = 'criticality';

export interface Classified {
  /** The request without criticality entries (the same object when it had none). */
  readonly request: RateLimitRequest;
  readonly criticality: Criticality;
}

function classOf(value: string): Criticality {
  const v = value.toLowerCase();
  return v === 'critical' || v === 'sheddable' ? v : 'default';
}

export function classify(request: RateLimitRequest, key: string): Classified {
  let found: Criticality | undefined;
  let changed = false;
  const descriptors = request.descriptors.map((d) => {
    if (!d.entries.some((e) => e.key === key)) return d;
    changed = true;
    for (const e of d.entries) if (e.key === key && found === undefined) found = classOf(e.value);
    return { ...d, entries: d.entries.filter((e) => e.key !== key) };
  });
  return { request: changed ? { ...request, descriptors } : request, criticality: found ?? 'default' };
}
