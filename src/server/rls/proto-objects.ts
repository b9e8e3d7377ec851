/**
 * Translation between the wire shapes produced by @grpc/proto-loader (snake_case, enums as names,
 * longs as strings) and the engine's protocol-free types. Decoding never throws on odd input:
 * anything malformed becomes an InvalidRequestError with a message.
 */
import { wellFormed } from '../../vocab/bytes.js';
import { InvalidRequestError } from '../../vocab/errors.js';
import {
  UNITS,
  type DescriptorEntry,
  type DescriptorStatus,
  type LimitOverride,
  type RateLimitDecision,
  type RateLimitRequest,
  type RequestDescriptor,
  type Unit,
} from '../../vocab/types.js';

export interface WireEntry {
  key?: string;
  value?: string;
}
export interface WireDescriptor {
  entries?: WireEntry[];
  limit?: { requests_per_unit?: number; unit?: string | number } | null;
  hits_addend?: { value?: string | number } | null;
  /** Envoy 1.38+: the hits are a refund. */
  is_negative_hits?: boolean;
}
export interface WireRequest {
  domain?: string;
  descriptors?: WireDescriptor[];
  hits_addend?: number;
}

const WIRE_UNITS: ReadonlySet<string> = new Set(UNITS.map((u) => u.toUpperCase()));

/**
 * The override's unit by number: envoy.type.v3.RateLimitUnit is UNKNOWN 0 … YEAR 6; 7 is read as
 * WEEK, the number RateLimitResponse.RateLimit.Unit gives it, as envoyproxy/ratelimit reads it (measured: an
 * override with unit 7 is a weekly limit there). UNKNOWN and numbers above 7 leave the override out: the
 * configured rule decides (the reference crashes on them), docs/responses.md.
 */
export const OVERRIDE_UNIT_NAMES: readonly string[] = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'];

export function unitFromWire(unit: string | number | undefined): Unit | undefined {
  const name = typeof unit === 'number' ? OVERRIDE_UNIT_NAMES[unit] : unit;
  if (name === undefined || !WIRE_UNITS.has(name)) return undefined;
  return name.toLowerCase() as Unit;
}

function toCount(value: string | number | undefined, field: string): number {
  const n = typeof value === 'number' ? value : Number(value ?? 0);
  if (!Number.isFinite(n) || n < 0 || !Number.isInteger(n)) throw new InvalidRequestError(`${field}: '${String(value)}' is not a non-negative integer`);
  return Math.min(n, Number.MAX_SAFE_INTEGER);
}

/**
 * The engine's descriptor, its optional fields left out when absent. Both decoders build it here (requestFromWire
 * below, and the lean transport's decode-request.ts), so both give the same object.
 */
export function requestDescriptor(
  entries: DescriptorEntry[],
  limit: LimitOverride | undefined,
  hitsAddend: number | undefined,
  negativeHits: boolean,
): RequestDescriptor {
  const d: { entries: DescriptorEntry[]; limit?: LimitOverride; hitsAddend?: number; negativeHits?: true } = { entries };
  if (limit !== undefined) d.limit = limit;
  if (hitsAddend !== undefined) d.hitsAddend = hitsAddend;
  if (negativeHits) d.negativeHits = true;
  return d;
}

export function requestFromWire(w: WireRequest): RateLimitRequest {
  const descriptors: RequestDescriptor[] = (w.descriptors ?? []).map((d, i) => {
    const entries = (d.entries ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' }));
    let limit: LimitOverride | undefined;
    if (d.limit != null)
      limit = { requestsPerUnit: toCount(d.limit.requests_per_unit, `descriptors[${i}].limit.requests_per_unit`), unit: unitFromWire(d.limit.unit) };
    const hitsAddend = d.hits_addend != null ? toCount(d.hits_addend.value, `descriptors[${i}].hits_addend`) : undefined;
    return requestDescriptor(entries, limit, hitsAddend, d.is_negative_hits === true);
  });
  return { domain: w.domain ?? '', descriptors, hitsAddend: toCount(w.hits_addend, 'hits_addend') };
}

export interface WireStatus {
  code: string;
  current_limit: { name: string; requests_per_unit: number; unit: string } | null;
  limit_remaining: number;
  duration_until_reset: { seconds: string; nanos: number } | null;
}

/** A RateLimitResponse as proto-loader decodes it on the client side (the CLI's `query`, the tests). */
export interface WireResponse {
  overall_code: string;
  statuses: WireStatus[];
  response_headers_to_add: { key: string; value: string }[];
  request_headers_to_add: { key: string; value: string }[];
  raw_body: Buffer;
  dynamic_metadata: { fields: Record<string, unknown> } | null;
}

export function statusToWire(s: DescriptorStatus): WireStatus {
  return {
    code: s.code,
    current_limit:
      s.currentLimit === undefined
        ? null
        : { name: s.currentLimit.name ?? '', requests_per_unit: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit?.toUpperCase() ?? 'UNKNOWN' },
    limit_remaining: s.limitRemaining,
    // Envoy reads only whole seconds: round up so a client never retries too early.
    duration_until_reset: s.durationUntilResetMs === undefined ? null : { seconds: String(Math.ceil(s.durationUntilResetMs / 1000)), nanos: 0 },
  };
}

export function responseToWire(d: RateLimitDecision): Record<string, unknown> {
  return {
    overall_code: d.overallCode,
    statuses: d.statuses.map(statusToWire),
    // Values may hold escaped raw bytes (vocab/bytes.ts); a protobuf string must be valid UTF-8 for Envoy.
    response_headers_to_add: d.responseHeadersToAdd.map((h) => ({ key: wellFormed(h.key), value: wellFormed(h.value) })),
    request_headers_to_add: d.requestHeadersToAdd.map((h) => ({ key: wellFormed(h.key), value: wellFormed(h.value) })),
    ...(d.rawBody ? { raw_body: Buffer.from(d.rawBody) } : {}),
    ...(d.dynamicMetadata ? { dynamic_metadata: structToWire(d.dynamicMetadata) } : {}),
  };
}

/**
 * JSON value → google.protobuf.Value. protobufjs bundles the well-known types with camelCase field names
 * (`stringValue`, not `string_value`), and keepCase keeps them so: a snake_case object would encode empty.
 */
function valueToWire(v: unknown): Record<string, unknown> {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: wellFormed(v) };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(valueToWire) } };
  return { structValue: structToWire(v as Record<string, unknown>) };
}

export function structToWire(obj: Readonly<Record<string, unknown>>): { fields: Record<string, unknown> } {
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) fields[wellFormed(k)] = valueToWire(v);
  return { fields };
}
