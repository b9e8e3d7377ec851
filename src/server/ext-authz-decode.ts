/**
 * Decodes an ext_authz v3 CheckRequest from its protobuf bytes into CheckAttributes (authz/types.ts), with
 * Envoy's field numbers (shared/protocol.md §3.2), independently of grpc-js so that any transport can use it.
 * Bounded: at most `maxHeaders` request headers and context extensions (RequestTooLargeError beyond, gRPC
 * RESOURCE_EXHAUSTED); the message size itself is bounded by the transport (MAX_REQUEST_BYTES). Only what
 * the actions read is kept; the body and everything else is skipped unread.
 *
 * Errors (gRPC INVALID_ARGUMENT): a malformed message; no `attributes.request.http` (Envoy's HTTP filter
 * always sends it); a socket address that is not an IP address.
 */
import type { CheckAttributes, HttpAttributes } from '../authz/types.js';
import { parseIp } from '../authz/ip.js';
import { wellFormed } from '../core/bytes.js';
import { InvalidRequestError, RequestTooLargeError } from '../core/errors.js';
import { MessageWalker, WIRE_LEN, type WireField } from './protobuf-fields.js';

export interface CheckRequestLimits {
  /** Most request headers (and, separately, context extensions) in one CheckRequest (AUTHZ_MAX_HEADERS). */
  readonly maxHeaders: number;
}

export const DEFAULT_CHECK_LIMITS: CheckRequestLimits = Object.freeze({ maxHeaders: 256 });

interface Draft {
  sourceAddress?: string;
  http?: HttpAttributes;
  extensions: Map<string, string>;
}

export function decodeCheckRequest(bytes: Uint8Array, limits: CheckRequestLimits = DEFAULT_CHECK_LIMITS): CheckAttributes {
  const w = new MessageWalker(bytes, 'CheckRequest');
  const draft: Draft = { extensions: new Map() };
  w.walk(0, bytes.length, '', (f) => {
    if (f.number !== 1) return;
    w.expect(f, WIRE_LEN, 'attributes');
    attributes(w, f, draft, limits);
  });
  if (draft.http === undefined) {
    throw new InvalidRequestError('CheckRequest has no attributes.request.http: only HTTP requests (envoy.filters.http.ext_authz) can be checked');
  }
  return { ...(draft.sourceAddress !== undefined ? { sourceAddress: draft.sourceAddress } : {}), http: draft.http, contextExtensions: draft.extensions };
}

function attributes(w: MessageWalker, at: WireField, draft: Draft, limits: CheckRequestLimits): void {
  const path = 'attributes';
  w.walk(at.start, at.end, path, (f) => {
    if (f.number === 1) {
      w.expect(f, WIRE_LEN, `${path}.source`);
      const address = sourceAddress(w, f);
      if (address !== undefined) draft.sourceAddress = address;
    } else if (f.number === 4) {
      w.expect(f, WIRE_LEN, `${path}.request`);
      w.walk(f.start, f.end, `${path}.request`, (r) => {
        if (r.number !== 2) return;
        w.expect(r, WIRE_LEN, `${path}.request.http`);
        draft.http = httpRequest(w, r, limits);
      });
    } else if (f.number === 10) {
      if (draft.extensions.size >= limits.maxHeaders) {
        throw new RequestTooLargeError(`CheckRequest has more than ${limits.maxHeaders} context_extensions (AUTHZ_MAX_HEADERS)`);
      }
      const [k, v] = w.mapEntry(f, `${path}.context_extensions`);
      draft.extensions.set(k, v);
    }
  });
}

/** attributes.source.address.socket_address.address, validated; undefined for a pipe or no address. */
function sourceAddress(w: MessageWalker, peer: WireField): string | undefined {
  let address: string | undefined;
  const path = 'attributes.source.address.socket_address.address';
  w.walk(peer.start, peer.end, 'attributes.source', (p) => {
    if (p.number !== 1) return;
    w.expect(p, WIRE_LEN, 'attributes.source.address');
    w.walk(p.start, p.end, 'attributes.source.address', (a) => {
      if (a.number !== 1) return; // pipe (2) or internal (3): not an IP
      w.expect(a, WIRE_LEN, 'attributes.source.address.socket_address');
      w.walk(a.start, a.end, 'attributes.source.address.socket_address', (s) => {
        if (s.number === 2) address = w.text(s, path);
      });
    });
  });
  if (address === undefined || address === '') return undefined;
  if (parseIp(address) === undefined) {
    // Shown well-formed: a lone surrogate (an escaped raw byte) would make grpc-js fail to send the status.
    const shown = wellFormed(address.length > 64 ? `${address.slice(0, 64)}…` : address);
    throw new InvalidRequestError(`${path}: '${shown}' is not an IP address`);
  }
  return address;
}

function httpRequest(w: MessageWalker, at: WireField, limits: CheckRequestLimits): HttpAttributes {
  const path = 'attributes.request.http';
  const http = { id: '', method: '', path: '', host: '', scheme: '', protocol: '' };
  const headers = new Map<string, string>();
  let count = 0;
  const countHeader = () => {
    if (++count > limits.maxHeaders) {
      throw new RequestTooLargeError(`CheckRequest has more than ${limits.maxHeaders} request headers (AUTHZ_MAX_HEADERS)`);
    }
  };
  // header_map (encode_raw_headers) repeats names: join repeated values as Envoy joins them in `headers`.
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    const earlier = headers.get(key);
    headers.set(key, earlier === undefined ? value : `${earlier}${key === 'cookie' ? '; ' : ','}${value}`);
  };
  w.walk(at.start, at.end, path, (f) => {
    switch (f.number) {
      case 1: http.id = w.text(f, `${path}.id`); break;
      case 2: http.method = w.text(f, `${path}.method`); break;
      case 3: {
        countHeader();
        const [k, v] = w.mapEntry(f, `${path}.headers`);
        headers.set(k.toLowerCase(), v); // a map: a repeated key replaces, as protobuf maps do
        break;
      }
      case 4: http.path = w.text(f, `${path}.path`); break;
      case 5: http.host = w.text(f, `${path}.host`); break;
      case 6: http.scheme = w.text(f, `${path}.scheme`); break;
      case 10: http.protocol = w.text(f, `${path}.protocol`); break;
      case 13:
        w.expect(f, WIRE_LEN, `${path}.header_map`);
        w.walk(f.start, f.end, `${path}.header_map`, (h) => {
          if (h.number !== 1) return;
          countHeader();
          w.expect(h, WIRE_LEN, `${path}.header_map.headers`);
          let key = '';
          let value: string | undefined;
          let raw: string | undefined;
          w.walk(h.start, h.end, `${path}.header_map.headers`, (v) => {
            if (v.number === 1) key = w.text(v, `${path}.header_map.headers.key`);
            else if (v.number === 2) value = w.text(v, `${path}.header_map.headers.value`);
            else if (v.number === 3) raw = w.text(v, `${path}.header_map.headers.raw_value`);
          });
          add(key, raw ?? value ?? '');
        });
        break;
      default:
        break;
    }
  });
  return { ...http, headers };
}
