/**
 * Protocol-free types shared by the decision engine, the stores and the servers.
 * Nothing here knows about gRPC, Redis or files.
 */

/** Time units of envoyproxy/ratelimit configs; month = 30 days and year = 365 days, as in Envoy. */
export const UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'year'] as const;
export type Unit = (typeof UNITS)[number];

export const UNIT_SECONDS: Readonly<Record<Unit, number>> = Object.freeze({
  second: 1,
  minute: 60,
  hour: 3600,
  day: 86_400,
  week: 604_800,
  month: 2_592_000,
  year: 31_536_000,
});

/**
 * Wire numbers of `envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit`.
 * WEEK is 7 although it sits between DAY and MONTH in Envoy's source.
 */
export const UNIT_WIRE_NUMBER: Readonly<Record<Unit, number>> = Object.freeze({
  second: 1,
  minute: 2,
  hour: 3,
  day: 4,
  month: 5,
  year: 6,
  week: 7,
});

/** The largest unit whose length divides `windowMs` exactly, or undefined when none does (e.g. 1500 ms). */
export function largestDividingUnit(windowMs: number): Unit | undefined {
  for (let i = UNITS.length - 1; i >= 0; i--) {
    const unit = UNITS[i]!;
    const ms = UNIT_SECONDS[unit] * 1000;
    if (windowMs % ms === 0) return unit;
  }
  return undefined;
}

export interface DescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** A per-request limit override (`RateLimitDescriptor.limit`); `unit` is undefined when Envoy sent UNKNOWN. */
export interface LimitOverride {
  readonly requestsPerUnit: number;
  readonly unit: Unit | undefined;
}

export interface RequestDescriptor {
  readonly entries: readonly DescriptorEntry[];
  readonly limit?: LimitOverride;
  /** Per-descriptor hits (UInt64Value, has presence): wins over the request-level value and may be 0 (check only). */
  readonly hitsAddend?: number;
  /**
   * Envoy's `is_negative_hits` (RateLimitDescriptor field 4, Envoy 1.38+): the hits are a refund, given back to
   * this descriptor's limits (counts floored at 0) instead of added; the descriptor then never rejects.
   */
  readonly negativeHits?: true;
}

export interface RateLimitRequest {
  readonly domain: string;
  readonly descriptors: readonly RequestDescriptor[];
  /** Request-level hits; 0 means 1. */
  readonly hitsAddend: number;
}

export type Code = 'OK' | 'OVER_LIMIT';

export interface ReportedLimit {
  readonly name?: string;
  readonly requestsPerUnit: number;
  /** The unit reported on the wire: the largest unit dividing the window (undefined → UNKNOWN). */
  readonly unit: Unit | undefined;
  /** The exact window, for the IETF headers. */
  readonly windowSeconds: number;
}

export interface DescriptorStatus {
  readonly code: Code;
  /** Unset when no limit matched (Envoy then skips this status when building headers). */
  readonly currentLimit?: ReportedLimit;
  readonly limitRemaining: number;
  /** Milliseconds; the wire carries whole seconds (rounded up) plus nanos. */
  readonly durationUntilResetMs?: number;
}

export interface HeaderValue {
  readonly key: string;
  readonly value: string;
}

export interface RateLimitDecision {
  readonly overallCode: Code;
  readonly statuses: readonly DescriptorStatus[];
  readonly responseHeadersToAdd: readonly HeaderValue[];
  readonly requestHeadersToAdd: readonly HeaderValue[];
  readonly rawBody?: Uint8Array;
  /**
   * OVER_LIMIT only: the HTTP status a protocol that can set one (ext_authz) should answer with, from the
   * speaking limit's `on_limit.status` (302/303/307 for `action: redirect`); absent = 429. RLS cannot set it.
   */
  readonly httpStatus?: number;
  /** JSON-like metadata for later Envoy filters (namespace envoy.filters.http.ratelimit); only set when non-empty. */
  readonly dynamicMetadata?: Readonly<Record<string, unknown>>;
  /** Some limit was rejected by FAILURE_MODE=closed because the store could not answer (ext_authz answers 503). */
  readonly storeFailure?: boolean;
}
