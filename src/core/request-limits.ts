/**
 * Bounds on one request, so that no single request can stall the event loop, take much memory, or hold a
 * shared Redis (issue #7: one 4 MiB request with 320k descriptors froze the loop for seconds).
 *
 * The servers check the cheap bounds while decoding (before any per-descriptor work); the engine checks
 * the whole request again before resolving anything, so every entry point (gRPC, /json, tests) is bound
 * by the same limits. Too big → RequestTooLargeError (gRPC RESOURCE_EXHAUSTED, HTTP 413); a bad value
 * (an absurd hits_addend, an empty domain) → InvalidRequestError (INVALID_ARGUMENT, HTTP 400).
 * Messages name the setting that raises the limit. Lengths are in bytes of what the string stands for
 * (core/bytes.ts: an escaped raw byte counts 1).
 */
import { escapedByteLength } from './bytes.js';
import { InvalidRequestError, RequestTooLargeError } from './errors.js';
import type { RateLimitRequest } from './types.js';

export interface RequestLimits {
  /** Largest encoded request (gRPC message, /json body), bytes. Enforced by the servers. */
  readonly maxMessageBytes: number;
  /** Descriptors in one request. */
  readonly maxDescriptors: number;
  /** Entries in one descriptor. */
  readonly maxEntries: number;
  /** Bytes of one entry key, and of the domain. */
  readonly maxKeyBytes: number;
  /** Bytes of one entry value. */
  readonly maxValueBytes: number;
  /** Largest hits_addend (request-level or per descriptor). */
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

export function checkValueBytes(bytes: number, path: FieldPath, limits: RequestLimits): void {
  if (bytes > limits.maxValueBytes) {
    throw new RequestTooLargeError(`${pathText(path)} is ${bytes} bytes; at most ${limits.maxValueBytes} are allowed (MAX_VALUE_BYTES)`);
  }
}

export function checkHitsAddend(hits: number, path: FieldPath, limits: RequestLimits): void {
  if (hits > limits.maxHitsAddend) {
    throw new InvalidRequestError(`${pathText(path)} is ${hits}; at most ${limits.maxHitsAddend} is allowed (MAX_HITS_ADDEND)`);
  }
}

/** Checks a whole decoded request: counts first, then lengths, before any per-descriptor work. */
export function checkRequest(request: RateLimitRequest, limits: RequestLimits): void {
  const { descriptors } = request;
  checkDescriptorCount(descriptors.length, limits);
  for (let i = 0; i < descriptors.length; i++) checkEntryCount(descriptors[i]!.entries.length, i, limits);
  checkKeyBytes(escapedByteLength(request.domain), 'domain', limits);
  checkHitsAddend(request.hitsAddend, 'hits_addend', limits);
  for (let i = 0; i < descriptors.length; i++) {
    const d = descriptors[i]!;
    for (let j = 0; j < d.entries.length; j++) {
      const e = d.entries[j]!;
      checkKeyBytes(escapedByteLength(e.key), () => `descriptors[${i}].entries[${j}].key`, limits);
      checkValueBytes(escapedByteLength(e.value), () => `descriptors[${i}].entries[${j}].value`, limits);
    }
    if (d.hitsAddend !== undefined) checkHitsAddend(d.hitsAddend, () => `descriptors[${i}].hits_addend`, limits);
  }
}
