/**
 * The Rate Limit Quota Service messages, decoded and encoded by hand (field numbers from Envoy's
 * api/envoy/service/rate_limit_quota/v3/rlqs.proto, api/envoy/type/v3/ratelimit_strategy.proto and
 * token_bucket.proto):
 *
 *   RateLimitQuotaUsageReports { string domain = 1; map<uint64, BucketQuotaUsage> bucket_quota_usages = 2 }
 *   BucketQuotaUsage { BucketId bucket_id = 1; Duration time_elapsed = 2; uint64 num_requests_allowed = 3;
 *                      uint64 num_requests_denied = 4; Timestamp last_report = 5 }
 *   BucketId { map<string, string> bucket = 1 }
 *   RateLimitQuotaResponse { repeated BucketAction bucket_action = 1 }
 *   BucketAction { BucketId bucket_id = 1; oneof { QuotaAssignmentAction quota_assignment_action = 2;
 *                                                  AbandonAction abandon_action = 3 } }
 *   QuotaAssignmentAction { Duration assignment_time_to_live = 2; RateLimitStrategy rate_limit_strategy = 3 }
 *   RateLimitStrategy { oneof { BlanketRule blanket_rule = 1 (ALLOW_ALL 0, DENY_ALL 1); ...; TokenBucket token_bucket = 3 } }
 *   TokenBucket { uint32 max_tokens = 1; UInt32Value tokens_per_fill = 2; Duration fill_interval = 3 }
 *
 * Field 2 of the reports is declared a map, but a sender may write it as a repeated BucketQuotaUsage: each
 * element is read as either (a map entry's field 1 is a varint key, a BucketQuotaUsage's field 1 a message).
 * `time_elapsed` is read but not required (Envoy sends 0 s for a new bucket, which the proto forbids).
 *
 * Bucket ids are bytes: Envoy copies header values as they are into a bucket id, but refuses a whole response
 * message whose bucket id is not UTF-8 (a proto3 string) and ends the stream. Such a bucket is decoded (its
 * bytes held escaped, vocab/bytes.ts) and marked, so that it is never answered.
 */
import { LEN, ProtobufError, ProtoReader, VARINT } from '../protobuf/reader.js';
import { escapedByteLength } from '../vocab/bytes.js';
import { InvalidRequestError } from '../vocab/errors.js';
import { lenFieldSize, ProtoWriter, utf8Length, varintSize } from '../protobuf/writer.js';

export const RLQS_PATH = '/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas';

export interface BucketUsage {
  /** The bucket id's entries, sorted by key (each key once); escaped strings (vocab/bytes.ts). */
  readonly entries: readonly { readonly key: string; readonly value: string }[];
  /** The bucket id is past the id bounds (entries, key or value length): answered, never tracked. */
  readonly oversize?: true;
  /** A key or value is not UTF-8: Envoy cannot read an answer for it. */
  readonly notUtf8?: true;
  readonly allowed: number;
  readonly denied: number;
  /** time_elapsed in seconds, as sent (0 when absent). */
  readonly elapsedS: number;
}

export interface UsageReports {
  readonly domain: string;
  readonly usages: BucketUsage[];
}

export interface DecodeLimits {
  /** Most entries in one tracked bucket id. */
  readonly maxEntries: number;
  /** Longest key or value of a tracked bucket id, bytes. */
  readonly maxValueBytes: number;
}

const NAME = 'RateLimitQuotaUsageReports';

interface DecodedId {
  entries: { key: string; value: string }[];
  oversize: boolean;
  notUtf8: boolean;
}

/** Whether an escaped string stands for UTF-8: escaped bytes are lone surrogates (String.prototype.isWellFormed, ES2024). */
const isUtf8 = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

function bucketId(c: ProtoReader, limits: DecodeLimits): DecodedId {
  const id = c.sub('bucket_id');
  const byKey = new Map<string, string>();
  let oversize = false;
  let notUtf8 = false;
  while (id.next()) {
    if (id.number !== 1) continue;
    const [key, value] = id.mapEntry('bucket');
    if (escapedByteLength(key) > limits.maxValueBytes || escapedByteLength(value) > limits.maxValueBytes) oversize = true;
    if (!isUtf8(key) || !isUtf8(value)) notUtf8 = true;
    byKey.set(key, value);
  }
  if (byKey.size === 0) c.fail('empty bucket id', c.at);
  if (byKey.size > limits.maxEntries) oversize = true;
  const entries = [...byKey].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([key, value]) => ({ key, value }));
  return { entries, oversize, notUtf8 };
}

function durationSeconds(c: ProtoReader): number {
  const d = c.sub('time_elapsed');
  let s = 0;
  while (d.next()) if (d.number === 1 && d.wireType === VARINT) s = d.varint;
  return s;
}

function bucketUsage(c: ProtoReader, name: string, limits: DecodeLimits): BucketUsage {
  const u = c.sub(name);
  let id: DecodedId | undefined;
  let allowed = 0;
  let denied = 0;
  let elapsedS = 0;
  while (u.next()) {
    if (u.number === 1) id = bucketId(u, limits);
    else if (u.number === 2) elapsedS = durationSeconds(u);
    else if (u.number === 3) allowed = u.uint('num_requests_allowed');
    else if (u.number === 4) denied = u.uint('num_requests_denied');
  }
  if (id === undefined) return c.fail(`${name}.bucket_id missing`, c.at);
  return {
    entries: id.entries,
    allowed,
    denied,
    elapsedS,
    ...(id.oversize ? { oversize: true as const } : {}),
    ...(id.notUtf8 ? { notUtf8: true as const } : {}),
  };
}

/** One element of field 2: a map entry { uint64 key = 1; BucketQuotaUsage value = 2 } or a BucketQuotaUsage itself. */
function element(c: ProtoReader, limits: DecodeLimits): BucketUsage | undefined {
  // A BucketQuotaUsage has its bucket_id (a message) as field 1, and may have fields 3 to 5; a map entry has
  // only a varint key (field 1, absent for key 0) and its value (field 2).
  const probe = c.sub('bucket_quota_usages');
  let isUsage = false;
  let value: BucketUsage | undefined;
  while (probe.next()) if ((probe.number === 1 && probe.wireType === LEN) || probe.number > 2) isUsage = true;
  if (isUsage) return bucketUsage(c, 'bucket_quota_usages', limits);
  const e = c.sub('bucket_quota_usages');
  while (e.next()) if (e.number === 2) value = bucketUsage(e, 'value', limits);
  return value;
}

/**
 * Decodes one reports message; malformed → InvalidRequestError naming the field. A bucket id past the id
 * bounds is decoded all the same (marked `oversize`): the other buckets of the report are still decided.
 */
export function decodeUsageReports(bytes: Uint8Array, limits: DecodeLimits): UsageReports {
  const c = new ProtoReader(bytes, NAME);
  let domain = '';
  const usages: BucketUsage[] = [];
  try {
    while (c.next()) {
      if (c.number === 1) domain = c.text('domain');
      else if (c.number === 2) {
        const u = element(c, limits);
        if (u !== undefined) usages.push(u);
      }
    }
  } catch (err) {
    throw err instanceof ProtobufError ? new InvalidRequestError(err.message) : err;
  }
  return { domain, usages };
}

// ---- encoding: sizes first, then one buffer (no intermediate buffers per field) ----

const durationSize = (seconds: number): number => (seconds > 0 ? 1 + varintSize(seconds) : 0);

function writeDuration(w: ProtoWriter, field: number, seconds: number): void {
  const size = durationSize(seconds);
  w.header(field, size);
  if (size > 0) {
    w.tag(1, 0);
    w.varint(seconds);
  }
}

/** What one bucket is told. */
export type Assignment =
  | { readonly kind: 'allow_all'; readonly ttlS: number }
  | { readonly kind: 'deny_all'; readonly ttlS: number }
  | { readonly kind: 'token_bucket'; readonly ttlS: number; readonly maxTokens: number; readonly tokensPerFill: number; readonly fillIntervalS: number }
  | { readonly kind: 'abandon' };

export interface BucketAction {
  readonly entries: BucketUsage['entries'];
  readonly assignment: Assignment;
}

function tokenBucketSize(a: Extract<Assignment, { kind: 'token_bucket' }>): number {
  return 1 + varintSize(a.maxTokens) + lenFieldSize(1 + varintSize(a.tokensPerFill)) + lenFieldSize(durationSize(a.fillIntervalS));
}

/** RateLimitStrategy's content. */
function strategySize(a: Assignment): number {
  return a.kind === 'token_bucket' ? lenFieldSize(tokenBucketSize(a)) : 2;
}

interface Sized {
  readonly keys: number[];
  readonly values: number[];
  readonly id: number;
  readonly quota: number;
  readonly action: number;
}

function sizeOf(b: BucketAction): Sized {
  const keys = b.entries.map((e) => utf8Length(e.key));
  const values = b.entries.map((e) => utf8Length(e.value));
  let id = 0;
  for (let i = 0; i < keys.length; i++) id += lenFieldSize(lenFieldSize(keys[i]!) + lenFieldSize(values[i]!));
  const a = b.assignment;
  const quota = a.kind === 'abandon' ? 0 : lenFieldSize(durationSize(a.ttlS)) + lenFieldSize(strategySize(a));
  return { keys, values, id, quota, action: lenFieldSize(id) + lenFieldSize(quota) };
}

function writeAction(w: ProtoWriter, b: BucketAction, z: Sized): void {
  w.header(1, z.action);
  w.header(1, z.id);
  b.entries.forEach((e, i) => {
    const k = z.keys[i]!;
    const v = z.values[i]!;
    w.header(1, lenFieldSize(k) + lenFieldSize(v));
    w.string(1, e.key, k);
    w.string(2, e.value, v);
  });
  const a = b.assignment;
  if (a.kind === 'abandon') {
    w.header(3, 0);
    return;
  }
  w.header(2, z.quota);
  writeDuration(w, 2, a.ttlS);
  w.header(3, strategySize(a));
  if (a.kind === 'token_bucket') {
    w.header(3, tokenBucketSize(a));
    w.tag(1, 0);
    w.varint(a.maxTokens);
    w.header(2, 1 + varintSize(a.tokensPerFill));
    w.tag(1, 0);
    w.varint(a.tokensPerFill);
    writeDuration(w, 3, a.fillIntervalS);
  } else {
    w.tag(1, 0); // blanket_rule, written even when 0 (ALLOW_ALL): a member of a oneof
    w.varint(a.kind === 'deny_all' ? 1 : 0);
  }
}

/** A RateLimitQuotaResponse with these actions, in order. */
export function encodeResponse(actions: readonly BucketAction[]): Buffer {
  const sized = actions.map(sizeOf);
  const w = new ProtoWriter(sized.reduce((n, z) => n + lenFieldSize(z.action), 0));
  actions.forEach((a, i) => writeAction(w, a, sized[i]!));
  if (w.pos !== w.buf.length) throw new Error(`RateLimitQuotaResponse: wrote ${w.pos} bytes of ${w.buf.length} sized`);
  return w.buf;
}
