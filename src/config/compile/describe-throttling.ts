/** How /rules shows the throttling fields of a limit, in the YAML's own spelling. */
import { formatWindow } from '../duration.js';
import { formatPpm, type Shares, type Throttling } from '../../vocab/throttling.js';

export interface DescribedThrottling {
  /** Absent for hard (the default), as the other defaults are. */
  readonly throttling?: { readonly soft: string } | { readonly elastic: { readonly capacity: number; readonly max: number } };
  readonly ban?: string;
  readonly shares?: { readonly critical: string; readonly default: string; readonly sheddable: string };
}

export function describeThrottling(limit: { readonly throttling?: Throttling; readonly banMs?: number; readonly shares?: Shares }): DescribedThrottling {
  const t = limit.throttling;
  return {
    ...(t === undefined ? {} : { throttling: t.mode === 'soft' ? { soft: formatPpm(t.ppm) } : { elastic: { capacity: t.capacity, max: t.max } } }),
    ...(limit.banMs !== undefined ? { ban: formatWindow(limit.banMs) } : {}),
    ...(limit.shares !== undefined
      ? { shares: { critical: formatPpm(limit.shares.critical), default: formatPpm(limit.shares.default), sheddable: formatPpm(limit.shares.sheddable) } }
      : {}),
  };
}
