/**
 * Bounds on one request, so that no single request can stall the event loop, take much memory, or hold a
 * shared Redis (one 4 MiB request with 320k descriptors would freeze the loop for seconds).
 *
 * What a client can shape (a descriptor value copied from a header, a hits_addend from metadata) is never
 * refused: Envoy fails open by default, so an error answer would leave the request unlimited. Such input is
 * decided like any other, and reported (observer onOversized: a metric and a rate-limited log line):
 * - a value longer than MAX_VALUE_BYTES is matched whole and counted under a SHA-256 of the whole identity
 *   (vocab/keys.ts hashes every long counter tag), so distinct long values keep distinct counters;
 * - a hits_addend above MAX_HITS_ADDEND counts as PARAM_BOUNDS.maxHits (2^32 - 1): more than any limit, so the
 *   request is over every limit it meets, and a limit that counts every charge charges that much.
 * What Envoy's own configuration fixes (descriptor and entry counts, key lengths, the domain) and what cannot be
 * decoded at all (a message over MAX_REQUEST_BYTES) is still refused: too big → RequestTooLargeError (gRPC
 * RESOURCE_EXHAUSTED, HTTP 413). Messages name the setting that raises the limit. Lengths are in bytes of
 * what the string stands for (vocab/bytes.ts: an escaped raw byte counts 1).
 */
import { PARAM_BOUNDS } from './algorithm-names.js';
import { escapedByteLength } from './bytes.js';
import { RequestTooLargeError } from './errors.js';
import type { RateLimitRequest, RequestDescriptor } from './types.js';

export interface RequestLimits {
  /** Largest encoded request (gRPC message, /json body), bytes. Enforced by the servers. */
  readonly maxMessageBytes: number;
  /** Descriptors in one request. */
  readonly maxDescriptors: number;
  /** Entries in one descriptor. */
  readonly maxEntries: number;
  /** Bytes of one entry key, and of the domain. */
  readonly maxKeyBytes: number;
  /** Bytes of one entry value; longer ones are decided all the same, and reported. */
  readonly maxValueBytes: number;
  /** Largest hits_addend (request-level or per descriptor) taken as it is; larger ones count as PARAM_BOUNDS.maxHits. */
  readonly maxHitsAddend: number;
}

/**
 * Sized for what Envoy sends (a few descriptors of a few entries, short keys, values copied from headers)
 * with wide headroom; docs/limits.md gives the reasoning. 4 GiB - 1 is the largest uint32: no limit can be
 * larger (requests_per_unit is a uint32), and it keeps every counter far from overflow.
 */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = Object.freeze({
  maxMessageBytes: 64 * 1024,
  maxDescriptors: 64,
  maxEntries: 16,
  maxKeyBytes: 256,
  maxValueBytes: 4096,
  maxHitsAddend: 4_294_967_295,
});

/**
 * Where a value sits in the request (`descriptors[0].entries[1].key`), for the error message: a string, or a
 * function that builds it. Requests that pass (nearly all) then build no path strings: on the per-request
 * path that halves the cost of checkRequest.
 */
export type FieldPath = string | (() => string);

const pathText = (path: FieldPath): string => (typeof path === 'string' ? path : path());

export function checkDescriptorCount(count: number, limits: RequestLimits): void {
  if (count > limits.maxDescriptors) {
    throw new RequestTooLargeError(`request has more than ${limits.maxDescriptors} descriptors (MAX_REQUEST_DESCRIPTORS)`);
  }
}

export function checkEntryCount(count: number, descriptor: number, limits: RequestLimits): void {
  if (count > limits.maxEntries) {
    throw new RequestTooLargeError(`descriptors[${descriptor}] has more than ${limits.maxEntries} entries (MAX_DESCRIPTOR_ENTRIES)`);
  }
}

export function checkKeyBytes(bytes: number, path: FieldPath, limits: RequestLimits): void {
  if (bytes > limits.maxKeyBytes) {
    throw new RequestTooLargeError(`${pathText(path)} is ${bytes} bytes; at most ${limits.maxKeyBytes} are allowed (MAX_KEY_BYTES)`);
  }
}

/** Client-shaped input beyond the bounds, decided all the same (see the module comment). */
export type OversizedField = 'value' | 'hits_addend';

/**
 * Checks a whole decoded request before any per-descriptor work: counts first, then lengths. Throws for what
 * is refused; returns the request to decide, with every hits_addend above maxHitsAddend raised to
 * PARAM_BOUNDS.maxHits, and calls `oversized` once per field kind found beyond its bound.
 */
export function checkRequest(request: RateLimitRequest, limits: RequestLimits, oversized?: (field: OversizedField) => void): RateLimitRequest {
  const { descriptors } = request;
  checkDescriptorCount(descriptors.length, limits);
  for (let i = 0; i < descriptors.length; i++) checkEntryCount(descriptors[i]!.entries.length, i, limits);
  checkKeyBytes(escapedByteLength(request.domain), 'domain', limits);
  let longValue = false;
  let bigHits = request.hitsAddend > limits.maxHitsAddend;
  for (let i = 0; i < descriptors.length; i++) {
    const d = descriptors[i]!;
    for (let j = 0; j < d.entries.length; j++) {
      const e = d.entries[j]!;
      // The path is made only for the error: a closure per entry otherwise.
      const keyBytes = escapedByteLength(e.key);
      if (keyBytes > limits.maxKeyBytes) checkKeyBytes(keyBytes, () => `descriptors[${i}].entries[${j}].key`, limits);
      // Length first: only a long string is measured byte by byte.
      if (e.value.length > limits.maxValueBytes / 3 && escapedByteLength(e.value) > limits.maxValueBytes) longValue = true;
    }
    if (d.hitsAddend !== undefined && d.hitsAddend > limits.maxHitsAddend) bigHits = true;
  }
  if (longValue) oversized?.('value');
  if (!bigHits) return request;
  oversized?.('hits_addend');
  const clamp = (hits: number): number => (hits > limits.maxHitsAddend ? PARAM_BOUNDS.maxHits : hits);
  return {
    ...request,
    hitsAddend: clamp(request.hitsAddend),
    descriptors: descriptors.map((d): RequestDescriptor => (d.hitsAddend === undefined ? d : { ...d, hitsAddend: clamp(d.hitsAddend) })),
  };
}
