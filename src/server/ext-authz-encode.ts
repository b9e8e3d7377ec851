/**
 * Encodes a Check answer (authz/types.ts) as an ext_authz v3 CheckResponse, with Envoy's field numbers
 * (shared/protocol.md §3.3), independently of grpc-js so that any transport can use it:
 *
 *   CheckResponse { google.rpc.Status status = 1 {int32 code = 1; string message = 2};
 *                   DeniedHttpResponse denied_response = 2 {HttpStatus status = 1 {code = 1}; repeated HeaderValueOption headers = 2; string body = 3};
 *                   OkHttpResponse ok_response = 3 {repeated HeaderValueOption headers = 2; repeated HeaderValueOption response_headers_to_add = 6} }
 *   HeaderValueOption { HeaderValue header = 1 {key = 1; value = 2}; BoolValue append = 2; HeaderAppendAction append_action = 3 }
 *
 * Both `append` (present, so every Envoy version reads it) and `append_action` are set: append true ↔
 * APPEND_IF_EXISTS_OR_ADD (0), false ↔ OVERWRITE_IF_EXISTS_OR_ADD (2).
 */
import type { AnswerHeader, CheckAnswer } from '../authz/types.js';

const OVERWRITE_IF_EXISTS_OR_ADD = 2;

/** Growable byte buffer with the few protobuf encodings we need. */
class Writer {
  private buf = new Uint8Array(256);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }

  varint(v: number): void {
    this.reserve(10);
    let n = v;
    while (n >= 0x80) {
      this.buf[this.len++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.len++] = n;
  }

  tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  bytes(field: number, data: Uint8Array): void {
    this.tag(field, 2);
    this.varint(data.length);
    this.reserve(data.length);
    this.buf.set(data, this.len);
    this.len += data.length;
  }

  string(field: number, text: string): void {
    if (text !== '') this.bytes(field, Buffer.from(text, 'utf8'));
  }

  /** A varint field; proto3 leaves out zero. */
  uint(field: number, value: number): void {
    if (value === 0) return;
    this.tag(field, 0);
    this.varint(value);
  }

  /** A sub-message, present even when empty (presence matters for BoolValue `append`). */
  message(field: number, build: (w: Writer) => void): void {
    const inner = new Writer();
    build(inner);
    this.bytes(field, inner.finish());
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }
}

function header(w: Writer, field: number, h: AnswerHeader): void {
  w.message(field, (o) => {
    o.message(1, (hv) => {
      hv.string(1, h.key);
      hv.string(2, h.value);
    });
    o.message(2, (b) => b.uint(1, h.append ? 1 : 0));
    o.uint(3, h.append ? 0 : OVERWRITE_IF_EXISTS_OR_ADD);
  });
}

export function encodeCheckResponse(answer: CheckAnswer): Buffer {
  const w = new Writer();
  w.message(1, (s) => {
    // int32 code: non-negative here (gRPC codes), so a plain varint.
    s.uint(1, answer.code);
    s.string(2, answer.message);
  });
  if ('denied' in answer) {
    const d = answer.denied;
    w.message(2, (dr) => {
      dr.message(1, (st) => st.uint(1, d.status));
      for (const h of d.headers) header(dr, 2, h);
      dr.string(3, d.body);
    });
  } else {
    w.message(3, (ok) => {
      for (const h of answer.requestHeaders) header(ok, 2, h);
      for (const h of answer.responseHeaders) header(ok, 6, h);
    });
  }
  const out = w.finish();
  return Buffer.from(out.buffer, out.byteOffset, out.length);
}
