/**
 * RESPONSE_DYNAMIC_METADATA: the `dynamic_metadata` of a response, as envoyproxy/ratelimit sends it with that
 * setting (and only then): the request as it came, so that later filters and access logs can see what was asked
 * (`%DYNAMIC_METADATA(envoy.filters.http.ratelimit:domain)%`). Measured on the reference: `domain`, `descriptors`
 * with `entries` as "key=value", the override as `limit` in protobuf text ("requests_per_unit:3 unit:HOUR"),
 * a per-descriptor `hitsAddend` when present (0 included), and the request's `hitsAddend` when not 0.
 * And `metadata`: the rules' own `metadata` maps, merged, from the descriptors that passed (read from the
 * reference's source and checked against its binary): a descriptor passed when its rule is not `unlimited` and
 * it is not over its limit (a shadow_mode rule's never is; a quota_mode rule's is). Merged in descriptor order:
 * a key already present stays, except that two mappings under one key merge the same way, recursively (lists
 * are not joined). Left out when empty. The reference merges into its loaded rules, so there a key merged in
 * once stays in that rule's metadata for later requests; here each answer merges afresh.
 * Ours beside them, when quota_mode rules matched: `quotaModeEnabled` and `quotaModeViolations` (the indexes of
 * the quota-mode descriptors over their limit), which the reference does not send.
 */
import type { RateLimitRequest, RequestDescriptor } from '../vocab/types.js';

type Metadata = Readonly<Record<string, unknown>>;

export function responseMetadata(
  request: RateLimitRequest,
  quota: { descriptors: readonly number[]; violations: readonly number[] },
  passed: readonly Metadata[] = [],
): Record<string, unknown> {
  const merged = passed.reduce<Metadata>(mergeMetadata, {});
  return {
    domain: request.domain,
    descriptors: request.descriptors.map(describeDescriptor),
    ...(request.hitsAddend !== 0 ? { hitsAddend: request.hitsAddend } : {}),
    ...(Object.keys(merged).length > 0 ? { metadata: merged } : {}),
    ...(quota.descriptors.length > 0 ? { quotaModeEnabled: true, quotaModeViolations: quota.violations } : {}),
  };
}

/** `into` with the keys of `from` it lacks; a mapping under a key both have is merged the same way. Copies, never mutates. */
export function mergeMetadata(into: Metadata, from: Metadata): Metadata {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(into)) put(out, key, value);
  for (const [key, value] of Object.entries(from)) {
    if (!Object.hasOwn(out, key)) put(out, key, value);
    else if (isMapping(out[key]) && isMapping(value)) put(out, key, mergeMetadata(out[key], value));
  }
  return out;
}

function isMapping(v: unknown): v is Metadata {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Sets an own property whatever the key (`__proto__` included). */
function put(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
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
