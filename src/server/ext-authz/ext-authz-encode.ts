/**
 * Encodes a Check answer (authz/types.ts) as an ext_authz v3 CheckResponse, with Envoy's field numbers
 * (envoy.service.auth.v3.CheckResponse), independently of grpc-js so that any transport can use it:
 *
 *   CheckResponse { google.rpc.Status status = 1 {int32 code = 1; string message = 2};
 *                   DeniedHttpResponse denied_response = 2 {HttpStatus status = 1 {code = 1}; repeated HeaderValueOption headers = 2; string body = 3};
 *                   OkHttpResponse ok_response = 3 {repeated HeaderValueOption headers = 2; repeated HeaderValueOption response_headers_to_add = 6} }
 *   HeaderValueOption { HeaderValue header = 1 {key = 1; value = 2}; BoolValue append = 2; HeaderAppendAction append_action = 3 }
 *
 * Both `append` (present, so every Envoy version reads it) and `append_action` are set: append true ↔
 * APPEND_IF_EXISTS_OR_ADD (0), false ↔ OVERWRITE_IF_EXISTS_OR_ADD (2).
 */
import type { AnswerHeader, CheckAnswer } from '../../authz/types.js';
import { lenFieldSize, ProtoWriter, utf8Length, varintSize } from '../../protobuf/writer.js';

const OVERWRITE_IF_EXISTS_OR_ADD = 2;

/** A varint field's size; proto3 leaves out zero. */
const uintSize = (v: number): number => (v === 0 ? 0 : 1 + varintSize(v));
/** A string field's size from its UTF-8 length; proto3 leaves out the empty string. */
const textSize = (n: number): number => (n === 0 ? 0 : lenFieldSize(n));

function writeUint(w: ProtoWriter, field: number, v: number): void {
  if (v === 0) return;
  w.tag(field, 0);
  w.varint(v);
}

function writeText(w: ProtoWriter, field: number, s: string, n: number): void {
  if (n > 0) w.string(field, s, n);
}

/** The sizes of one answer, computed before it is written: UTF-8 lengths in write order, header sizes. */
interface Sizes {
  readonly text: number[];
  readonly headers: number[];
}

/** HeaderValueOption's content: header (1) {key, value}, append (2) BoolValue, always present, append_action (3). */
function headerSize(h: AnswerHeader, z: Sizes): number {
  const k = utf8Length(h.key);
  const v = utf8Length(h.value);
  z.text.push(k, v);
  const size = lenFieldSize(textSize(k) + textSize(v)) + lenFieldSize(uintSize(h.append ? 1 : 0)) + uintSize(h.append ? 0 : OVERWRITE_IF_EXISTS_OR_ADD);
  z.headers.push(size);
  return lenFieldSize(size);
}

/** Writes the next header (its sizes at `t` in z.text and `i` in z.headers). */
function writeHeader(w: ProtoWriter, field: number, h: AnswerHeader, z: Sizes, t: number, i: number): void {
  const k = z.text[t]!;
  const v = z.text[t + 1]!;
  w.header(field, z.headers[i]!);
  w.header(1, textSize(k) + textSize(v));
  writeText(w, 1, h.key, k);
  writeText(w, 2, h.value, v);
  w.header(2, uintSize(h.append ? 1 : 0));
  writeUint(w, 1, h.append ? 1 : 0);
  writeUint(w, 3, h.append ? 0 : OVERWRITE_IF_EXISTS_OR_ADD);
}

export function encodeCheckResponse(answer: CheckAnswer): Buffer {
  const z: Sizes = { text: [], headers: [] };
  const messageLength = utf8Length(answer.message);
  // google.rpc.Status, present even when empty; int32 code: non-negative here (gRPC codes), so a plain varint.
  const status = uintSize(answer.code) + textSize(messageLength);
  let body = 0;
  let bodyLength = 0;
  if ('denied' in answer) {
    const d = answer.denied;
    bodyLength = utf8Length(d.body);
    body = lenFieldSize(uintSize(d.status)) + textSize(bodyLength);
    for (const h of d.headers) body += headerSize(h, z);
  } else {
    for (const h of answer.requestHeaders) body += headerSize(h, z);
    for (const h of answer.responseHeaders) body += headerSize(h, z);
  }
  const w = new ProtoWriter(lenFieldSize(status) + lenFieldSize(body));
  w.header(1, status);
  writeUint(w, 1, answer.code);
  writeText(w, 2, answer.message, messageLength);
  let i = 0;
  if ('denied' in answer) {
    const d = answer.denied;
    w.header(2, body);
    w.header(1, uintSize(d.status));
    writeUint(w, 1, d.status);
    for (const h of d.headers) writeHeader(w, 2, h, z, 2 * i, i++);
    writeText(w, 3, d.body, bodyLength);
  } else {
    w.header(3, body);
    for (const h of answer.requestHeaders) writeHeader(w, 2, h, z, 2 * i, i++);
    for (const h of answer.responseHeaders) writeHeader(w, 6, h, z, 2 * i, i++);
  }
  if (w.pos !== w.buf.length) throw new Error(`CheckResponse: wrote ${w.pos} bytes of ${w.buf.length} sized`);
  return w.buf;
}
