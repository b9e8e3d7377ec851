/**
 * Rules that take their limit from a capacity resource (`capacity: {resource: api-backend}` in a rate_limit):
 * the two-tier design. Globally, a capacity service (ours or Doorman) splits the resource's capacity
 * between replicas by their demand; locally, each replica enforces its share in process — no store call per
 * request. This module holds the vocabulary the config, the engine and the composition root share: the rule's
 * spec and the seam through which the engine reads the granted share (implemented over the capacity client by
 * src/capacity-client/sidecar-shares.ts, wired in app/start-service.ts).
 */

export type CapacityFallback = 'pessimistic' | 'optimistic' | 'safe';

/** The `capacity:` block of a limit, validated (src/config/validate/validate-capacity-rule.ts). */
export interface CapacityRuleSpec {
  /** The capacity service's resource id. */
  readonly resource: string;
  /** The share used while no lease runs (before the first grant, server unreachable): 0, the wants, or the last safe capacity. */
  readonly fallback: CapacityFallback;
  /** 'observed': the replica's request rate over the last refresh interval (with headroom and a floor); or a fixed number per window. */
  readonly wants: 'observed' | number;
  /** Observed wants never go below this (requests per window). */
  readonly minWants: number;
  /** Observed wants are raised by this much (percent), so that a growing demand is asked for before it is refused. */
  readonly headroomPercent: number;
}

/**
 * The granted shares, as the engine reads them. `requestsPerUnit` of a capacity rule is its ceiling: the replica
 * never asks for, nor admits, more than that per window whatever it is granted.
 */
export interface CapacityShares {
  /** This replica's share of `resource`, in requests per the rule's window (the fallback when no lease runs). */
  grant(resource: string): number;
  /** Hits asked for under `resource` (admitted or not): the demand the next wants is computed from. */
  observe(resource: string, hits: number): void;
  /** Gives the shares back (the service stops). */
  close?(): Promise<void>;
}

/** The check of a capacity rule: its spec (the limit, window and hits are the check's own). */
export interface CapacityCheck {
  readonly resource: string;
}
