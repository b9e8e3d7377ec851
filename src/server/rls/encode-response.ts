/**
 * Encodes a RateLimitDecision as envoy.service.ratelimit.v3.RateLimitResponse bytes, written for exactly this
 * message (field numbers: Envoy's, as in proto/envoy/service/ratelimit/v3/rls.proto) instead of going
 * through proto-loader's object conversion: the same wire meaning as responseToWire() + protobufjs (checked
 * by test/unit/server/encode-response.test.ts on random decisions), in one buffer and one pass.
 *
 * Scalars equal to their default are left out (proto3). Strings go through wellFormed() (a protobuf string
 * must be valid UTF-8 for Envoy); durations are whole seconds rounded up, as in wire.ts.
 */
import { wellFormed } from '../../vocab/bytes.js';
import { UNIT_WIRE_NUMBER, type DescriptorStatus, type HeaderValue, type RateLimitDecision } from '../../vocab/types.js';
import { lenFieldSize, ProtoWriter, utf8Length, varintSize } from '../../protobuf/writer.js';

const CODE = { OK: 1, OVER_LIMIT: 2 } as const;

interface Sized {
  /** Well-formed strings and their UTF-8 lengths, in write order. */
  readonly text: string[];
  readonly lens: number[];
}

function str(s: string, sized: Sized): number {
  const w = wellFormed(s);
  const n = utf8Length(w);
  sized.text.push(w);
  sized.lens.push(n);
  return n;
}

function limitSize(s: DescriptorStatus, sized: Sized): number {
  const l = s.currentLimit!;
  let n = 0;
  if (l.name !== undefined && l.name !== '') n += lenFieldSize(str(l.name, sized));
  if (l.requestsPerUnit !== 0) n += 1 + varintSize(l.requestsPerUnit);
  if (l.unit !== undefined) n += 2;
  return n;
}

function resetSeconds(s: DescriptorStatus): number {
  return Math.ceil(s.durationUntilResetMs! / 1000);
}

function statusSize(s: DescriptorStatus, sized: Sized): number {
  let n = 2; // code (OK or OVER_LIMIT, never the default)
  if (s.currentLimit !== undefined) n += lenFieldSize(limitSize(s, sized));
  if (s.limitRemaining !== 0) n += 1 + varintSize(s.limitRemaining);
  if (s.durationUntilResetMs !== undefined) {
    const sec = resetSeconds(s);
    n += lenFieldSize(sec > 0 ? 1 + varintSize(sec) : 0);
  }
  return n;
}

function headerSize(h: HeaderValue, sized: Sized): number {
  const k = str(h.key, sized);
  const v = str(h.value, sized);
  return (k > 0 ? lenFieldSize(k) : 0) + (v > 0 ? lenFieldSize(v) : 0);
}

// google.protobuf.Struct / Value / ListValue (dynamic_metadata): sizes are recomputed when writing; the
// metadata is rare and small.
function valueSize(v: unknown): number {
  if (v === null || v === undefined) return 2; // null_value = NULL_VALUE (0), written explicitly: a oneof
  if (typeof v === 'number') return 9;
  if (typeof v === 'string') return lenFieldSize(utf8Length(wellFormed(v)));
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return lenFieldSize(v.reduce((n: number, x) => n + lenFieldSize(valueSize(x)), 0));
  return lenFieldSize(structSize(v as Record<string, unknown>));
}

function structSize(obj: Readonly<Record<string, unknown>>): number {
  let n = 0;
  for (const [k, v] of Object.entries(obj)) n += lenFieldSize(lenFieldSize(utf8Length(wellFormed(k))) + lenFieldSize(valueSize(v)));
  return n;
}

function writeValue(w: ProtoWriter, v: unknown): void {
  if (v === null || v === undefined) {
    w.tag(1, 0);
    w.varint(0);
  } else if (typeof v === 'number') w.double(2, v);
  else if (typeof v === 'string') {
    const s = wellFormed(v);
    w.string(3, s, utf8Length(s));
  } else if (typeof v === 'boolean') {
    w.tag(4, 0);
    w.varint(v ? 1 : 0);
  } else if (Array.isArray(v)) {
    w.header(
      6,
      v.reduce((n: number, x) => n + lenFieldSize(valueSize(x)), 0),
    );
    for (const x of v) {
      w.header(1, valueSize(x));
      writeValue(w, x);
    }
  } else {
    w.header(5, structSize(v as Record<string, unknown>));
    writeStruct(w, v as Record<string, unknown>);
  }
}

function writeStruct(w: ProtoWriter, obj: Readonly<Record<string, unknown>>): void {
  for (const [k, v] of Object.entries(obj)) {
    const key = wellFormed(k);
    const kl = utf8Length(key);
    const vs = valueSize(v);
    w.header(1, lenFieldSize(kl) + lenFieldSize(vs));
    w.string(1, key, kl);
    w.header(2, vs);
    writeValue(w, v);
  }
}

function pushed(list: number[], n: number): number {
  list.push(n);
  return n;
}

/**
 * The response bytes; with `framePrefix` 5 the first five bytes are left for the gRPC message header
 * (flag 0, big-endian length), filled in here, so the lean transport writes the result as it is.
 */
export function encodeRateLimitResponse(d: RateLimitDecision, framePrefix: 0 | 5 = 0): Buffer {
  const sized: Sized = { text: [], lens: [] };
  const statusSizes: number[] = [];
  const headerSizes: number[] = [];
  let size = 2; // overall_code
  for (const s of d.statuses) {
    const n = statusSize(s, sized);
    statusSizes.push(n);
    size += lenFieldSize(n);
  }
  for (const h of d.responseHeadersToAdd) size += lenFieldSize(pushed(headerSizes, headerSize(h, sized)));
  for (const h of d.requestHeadersToAdd) size += lenFieldSize(pushed(headerSizes, headerSize(h, sized)));
  if (d.rawBody !== undefined && d.rawBody.length > 0) size += lenFieldSize(d.rawBody.length);
  const metaSize = d.dynamicMetadata !== undefined ? structSize(d.dynamicMetadata) : -1;
  if (metaSize >= 0) size += lenFieldSize(metaSize);

  const w = new ProtoWriter(size, framePrefix);
  if (framePrefix === 5) {
    w.buf[0] = 0;
    w.buf.writeUInt32BE(size, 1);
  }
  const { text, lens } = sized;
  let t = 0; // next entry of sized
  w.tag(1, 0);
  w.varint(CODE[d.overallCode]);
  let i = 0;
  for (const s of d.statuses) {
    w.header(2, statusSizes[i++]!);
    w.tag(1, 0);
    w.varint(CODE[s.code]);
    const l = s.currentLimit;
    if (l !== undefined) {
      const name = l.name !== undefined && l.name !== '' ? t++ : -1;
      w.header(
        2,
        (name >= 0 ? lenFieldSize(lens[name]!) : 0) + (l.requestsPerUnit !== 0 ? 1 + varintSize(l.requestsPerUnit) : 0) + (l.unit !== undefined ? 2 : 0),
      );
      if (l.requestsPerUnit !== 0) {
        w.tag(1, 0);
        w.varint(l.requestsPerUnit);
      }
      if (l.unit !== undefined) {
        w.tag(2, 0);
        w.varint(UNIT_WIRE_NUMBER[l.unit]);
      }
      if (name >= 0) w.string(3, text[name]!, lens[name]!);
    }
    if (s.limitRemaining !== 0) {
      w.tag(3, 0);
      w.varint(s.limitRemaining);
    }
    if (s.durationUntilResetMs !== undefined) {
      const sec = resetSeconds(s);
      w.header(4, sec > 0 ? 1 + varintSize(sec) : 0);
      if (sec > 0) {
        w.tag(1, 0);
        w.varint(sec);
      }
    }
  }
  const nResponse = d.responseHeadersToAdd.length;
  for (let j = 0; j < headerSizes.length; j++) {
    w.header(j < nResponse ? 3 : 4, headerSizes[j]!);
    const kl = lens[t]!;
    if (kl > 0) w.string(1, text[t]!, kl);
    const vl = lens[t + 1]!;
    if (vl > 0) w.string(2, text[t + 1]!, vl);
    t += 2;
  }
  if (d.rawBody !== undefined && d.rawBody.length > 0) w.bytes(5, d.rawBody);
  if (metaSize >= 0) {
    w.header(6, metaSize);
    writeStruct(w, d.dynamicMetadata!);
  }
  if (w.pos !== w.buf.length) throw new Error(`encodeRateLimitResponse: wrote ${w.pos} of ${w.buf.length} bytes`);
  return w.buf;
}
