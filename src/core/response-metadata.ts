/**
 * RESPONSE_DYNAMIC_METADATA: the `dynamic_metadata` of a response, as envoyproxy/ratelimit sends it with that
 * setting (and only then): the request as it came, so that later filters and access logs can see what was asked
 * (`%DYNAMIC_METADATA(envoy.filters.http.ratelimit:domain)%`). Measured on the reference: `domain`, `descriptors`
 * with `entries` as "key=value", the override as `limit` in protobuf text ("requests_per_unit:3 unit:HOUR"),
 * a per-descriptor `hitsAddend` when present (0 included), and the request's `hitsAddend` when not 0.
 * Ours beside them, when quota_mode rules matched: `quotaModeEnabled` and `quotaModeViolations` (the indexes of
 * the quota-mode descriptors over their limit), which the reference does not send.
 */
import type { RateLimitRequest, RequestDescriptor } from './types.js';

export function responseMetadata(request: RateLimitRequest, quota: { descriptors: readonly number[]; violations: readonly number[] }): Record<string, unknown> {
  return {
    domain: request.domain,
    descriptors: request.descriptors.map(describeDescriptor),
    ...(request.hitsAddend !== 0 ? { hitsAddend: request.hitsAddend } : {}),
    ...(quota.descriptors.length > 0 ? { quotaModeEnabled: true, quotaModeViolations: quota.violations } : {}),
  };
}

function describeDescriptor(d: RequestDescriptor): Record<string, unknown> {
  return {
    entries: d.entries.map((e) => `${e.key}=${e.value}`),
    ...(d.limit !== undefined ? { limit: limitText(d.limit.requestsPerUnit, d.limit.unit) } : {}),
    ...(d.hitsAddend !== undefined ? { hitsAddend: d.hitsAddend } : {}),
  };
}

/** The override as protobuf text format prints it: fields at their zero value are left out. */
function limitText(requestsPerUnit: number, unit: string | undefined): string {
  return [...(requestsPerUnit !== 0 ? [`requests_per_unit:${requestsPerUnit}`] : []), ...(unit !== undefined ? [`unit:${unit.toUpperCase()}`] : [])].join(' ');
}
