/**
 * Decodes a RateLimitRequest from its protobuf bytes ourselves, instead of letting grpc-js do it, because:
 *
 * - a decode failure inside grpc-js becomes INTERNAL; here it is an InvalidRequestError (INVALID_ARGUMENT);
 * - the request limits are checked while reading (descriptor and entry counts, key lengths from their length
 *   prefixes), so an oversized request is refused before any per-descriptor work (long values are decided:
 *   vocab/request-limits.ts);
 * - descriptor keys and values are decoded from their bytes with the injective escape of vocab/bytes.ts:
 *   protobuf `string` and `bytes` share the wire encoding, and a lossy UTF-8 decode would make distinct
 *   non-UTF-8 values share a counter.
 *
 * Field numbers are Envoy's (RateLimitRequest, RateLimitDescriptor). Unknown fields are skipped; a known field with the
 * wrong wire type, a truncated field, an over-long varint or a group is malformed (protobuf/reader.ts), the
 * path to the field built only then.
 */
import { decodeEscaped } from '../../vocab/bytes.js';
import { InvalidRequestError } from '../../vocab/errors.js';
import { checkDescriptorCount, checkEntryCount, checkKeyBytes, type RequestLimits } from '../../vocab/request-limits.js';
import type { DescriptorEntry, RateLimitRequest, RequestDescriptor } from '../../vocab/types.js';
import { LEN, ProtobufError, ProtoReader, VARINT } from '../../protobuf/reader.js';
import { requestDescriptor, unitFromWire } from './proto-objects.js';

function entry(r: ProtoReader, limits: RequestLimits): DescriptorEntry {
  let key = '';
  let value = '';
  while (r.next()) {
    const field = r.number;
    if (field === 1 || field === 2) {
      r.expect(LEN, field === 1 ? 'key' : 'value');
      const s = r.start;
      const e = r.stop;
      // A key's length first, from the prefix: an oversized key is never decoded. A long value is decoded and
      // decided (vocab/request-limits.ts): a client chooses it, and an error answer would leave it unlimited.
      if (field === 1 && e - s > limits.maxKeyBytes) checkKeyBytes(e - s, () => `${r.path}.key`, limits);
      const text = decodeEscaped(r.buf, s, e);
      if (field === 1) key = text;
      else value = text;
    }
  }
  return { key, value };
}

function descriptor(r: ProtoReader, index: number, limits: RequestLimits): RequestDescriptor {
  const entries: DescriptorEntry[] = [];
  let limit: { requestsPerUnit: number; unitNumber: number } | undefined;
  let hitsAddend: number | undefined;
  let negative = false;
  while (r.next()) {
    const field = r.number;
    if (field === 1) {
      const n = entries.length;
      checkEntryCount(n + 1, index, limits);
      entries.push(entry(r.sub('entries', n), limits));
    } else if (field === 2) {
      const o = r.sub('limit');
      const l = (limit ??= { requestsPerUnit: 0, unitNumber: 0 }); // a repeated message merges
      while (o.next()) {
        if (o.number === 1) l.requestsPerUnit = o.uint('requests_per_unit') % 2 ** 32;
        else if (o.number === 2) l.unitNumber = o.uint('unit'); // wire.ts names it (7 is WEEK; UNKNOWN and unknown numbers leave the override out)
      }
    } else if (field === 3) {
      const h = r.sub('hits_addend');
      hitsAddend ??= 0; // present, even empty (UInt64Value has presence)
      while (h.next()) if (h.number === 1) hitsAddend = Math.min(h.uint('value'), Number.MAX_SAFE_INTEGER);
    } else if (field === 4) negative = r.uint('is_negative_hits') !== 0;
  }
  return requestDescriptor(
    entries,
    limit === undefined ? undefined : { requestsPerUnit: limit.requestsPerUnit, unit: unitFromWire(limit.unitNumber) },
    hitsAddend,
    negative,
  );
}

/** One reader for every request (decoding is synchronous), pointed at no bytes between requests. */
const EMPTY = new Uint8Array(0);
const reader = new ProtoReader(EMPTY, 'RateLimitRequest');

function decode(bytes: Uint8Array, limits: RequestLimits): RateLimitRequest {
  const r = reader.reset(bytes);
  let domain = '';
  let hitsAddend = 0;
  const descriptors: RequestDescriptor[] = [];
  while (r.next()) {
    const field = r.number;
    if (field === 1) {
      r.expect(LEN, 'domain');
      checkKeyBytes(r.stop - r.start, 'domain', limits);
      domain = decodeEscaped(bytes, r.start, r.stop);
    } else if (field === 2) {
      const n = descriptors.length;
      checkDescriptorCount(n + 1, limits);
      descriptors.push(descriptor(r.sub('descriptors', n), n, limits));
    } else if (field === 3) {
      r.expect(VARINT, 'hits_addend');
      hitsAddend = r.varint % 2 ** 32; // uint32: the low 32 bits, as protobuf decoders do
    }
  }
  return { domain, descriptors, hitsAddend };
}

/** Bytes → the engine's request; throws InvalidRequestError (malformed) or RequestTooLargeError. */
export function decodeRateLimitRequest(bytes: Uint8Array, limits: RequestLimits): RateLimitRequest {
  try {
    return decode(bytes, limits);
  } catch (err) {
    throw err instanceof ProtobufError ? new InvalidRequestError(err.message) : err;
  } finally {
    reader.reset(EMPTY);
  }
}
