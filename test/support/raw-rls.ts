/**
 * An independent RateLimitService client: it encodes and decodes protobuf by hand with the field numbers
 * of Envoy's API, not with the project's .proto files, so a wrong field number in
 * proto/ would make the tests that use it fail.
 */
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

const { Writer, Reader } = protobuf;

/** A key or value: text (sent as UTF-8) or raw bytes (e.g. not valid UTF-8: `string` and `bytes` share the wire form). */
export type RawText = string | Uint8Array;

export interface RawDescriptor {
  entries: [RawText, RawText][];
  limit?: { requestsPerUnit: number; unit: number };
  /** UInt64Value: presence matters (0 = check only). */
  hitsAddend?: number;
  /** is_negative_hits (field 4, Envoy 1.38+): the hits are a refund. */
  negative?: boolean;
}

export function encodeRequest(domain: string, descriptors: RawDescriptor[], hitsAddend = 0): Uint8Array {
  const w = Writer.create();
  w.uint32((1 << 3) | 2).string(domain);
  for (const d of descriptors) {
    w.uint32((2 << 3) | 2).fork();
    for (const [key, value] of d.entries) {
      w.uint32((1 << 3) | 2)
        .fork()
        .uint32((1 << 3) | 2);
      if (typeof key === 'string') w.string(key);
      else w.bytes(key);
      w.uint32((2 << 3) | 2);
      if (typeof value === 'string') w.string(value);
      else w.bytes(value);
      w.ldelim();
    }
    if (d.limit)
      w.uint32((2 << 3) | 2)
        .fork()
        .uint32((1 << 3) | 0)
        .uint32(d.limit.requestsPerUnit)
        .uint32((2 << 3) | 0)
        .int32(d.limit.unit)
        .ldelim();
    if (d.hitsAddend !== undefined) {
      w.uint32((3 << 3) | 2).fork();
      if (d.hitsAddend !== 0) w.uint32((1 << 3) | 0).uint64(d.hitsAddend);
      w.ldelim();
    }
    if (d.negative === true) w.uint32((4 << 3) | 0).bool(true);
    w.ldelim();
  }
  if (hitsAddend !== 0) w.uint32((3 << 3) | 0).uint32(hitsAddend);
  return w.finish();
}

type Field = number | Uint8Array;

/** Decodes one message level into field number → values (varints and doubles as numbers, length-delimited as bytes). */
export function fields(bytes: Uint8Array): Map<number, Field[]> {
  const r = Reader.create(bytes);
  const out = new Map<number, Field[]>();
  while (r.pos < r.len) {
    const tag = r.uint32();
    const no = tag >>> 3;
    let v: Field;
    switch (tag & 7) {
      case 0:
        v = r.uint32(); // every varint we read fits 32 bits (codes, limits, remaining, seconds)
        break;
      case 1:
        v = r.double(); // the only fixed64 we meet: google.protobuf.Value.number_value
        break;
      case 2:
        v = r.bytes();
        break;
      default:
        throw new Error(`unexpected wire type ${tag & 7} for field ${no}`);
    }
    out.set(no, [...(out.get(no) ?? []), v]);
  }
  return out;
}

const text = (b: Field | undefined) => (b === undefined ? '' : Buffer.from(b as Uint8Array).toString('utf8'));
const num = (v: Field | undefined) => (v === undefined ? 0 : (v as number));

export interface RawStatus {
  code: number;
  currentLimit?: { name: string; requestsPerUnit: number; unit: number };
  limitRemaining: number;
  resetSeconds?: number;
}
export interface RawResponse {
  overallCode: number;
  statuses: RawStatus[];
  responseHeaders: [string, string][];
  rawBody: string;
  /** dynamic_metadata (field 6, google.protobuf.Struct): key → the Value's field number and raw content. */
  dynamicMetadata: Map<string, { field: number; value: Field }>;
}

export function decodeResponse(bytes: Uint8Array): RawResponse {
  const f = fields(bytes);
  return {
    overallCode: num(f.get(1)?.[0]),
    statuses: (f.get(2) ?? []).map((b) => {
      const s = fields(b as Uint8Array);
      const cl = s.get(2)?.[0];
      const reset = s.get(4)?.[0];
      const status: RawStatus = { code: num(s.get(1)?.[0]), limitRemaining: num(s.get(3)?.[0]) };
      if (cl) {
        const l = fields(cl as Uint8Array);
        status.currentLimit = { name: text(l.get(3)?.[0]), requestsPerUnit: num(l.get(1)?.[0]), unit: num(l.get(2)?.[0]) };
      }
      if (reset) status.resetSeconds = num(fields(reset as Uint8Array).get(1)?.[0]);
      return status;
    }),
    responseHeaders: (f.get(3) ?? []).map((b) => {
      const h = fields(b as Uint8Array);
      return [text(h.get(1)?.[0]), text(h.get(2)?.[0])] as [string, string];
    }),
    rawBody: text(f.get(5)?.[0]),
    dynamicMetadata: new Map(
      (f.get(6) ? (fields(f.get(6)![0] as Uint8Array).get(1) ?? []) : []).map((entry) => {
        const e = fields(entry as Uint8Array);
        const value = fields((e.get(2)?.[0] as Uint8Array | undefined) ?? new Uint8Array());
        const [field, content] = [...value.entries()][0] ?? [0, [0]];
        return [text(e.get(1)?.[0]), { field, value: content[0]! }];
      }),
    ),
  };
}

export const RLS_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export class RawRlsClient {
  private readonly client: grpc.Client;
  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure());
  }

  call(domain: string, descriptors: RawDescriptor[], hitsAddend = 0, timeoutMs = 5000): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest<Uint8Array, RawResponse>(
        RLS_PATH,
        (b) => Buffer.from(b),
        (b) => decodeResponse(b),
        encodeRequest(domain, descriptors, hitsAddend),
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (e, r) => (e ? reject(e) : resolve(r!)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
