/**
 * Decodes an ext_authz v3 CheckRequest from its protobuf bytes into CheckAttributes (authz/types.ts), with
 * Envoy's field numbers (envoy.service.auth.v3.CheckRequest), independently of grpc-js so that any transport can use it.
 * Bounded: at most `maxHeaders` request headers and context extensions (RequestTooLargeError beyond, gRPC
 * RESOURCE_EXHAUSTED); the message size itself is bounded by the transport (MAX_REQUEST_BYTES). Only what
 * the actions read is kept; the body and everything else is skipped unread.
 *
 * Errors (gRPC INVALID_ARGUMENT): a malformed message; no `attributes.request.http` (Envoy's HTTP filter
 * always sends it); a socket address that is not an IP address.
 */
import type { CheckAttributes, HttpAttributes } from '../../authz/types.js';
import { parseIp } from '../../authz/ip.js';
import { wellFormed } from '../../vocab/bytes.js';
import { InvalidRequestError, RequestTooLargeError } from '../../vocab/errors.js';
import { ProtobufError, ProtoReader } from '../../protobuf/reader.js';

export interface CheckRequestLimits {
  /** Most request headers (and, separately, context extensions) in one CheckRequest (AUTHZ_MAX_HEADERS). */
  readonly maxHeaders: number;
}

export const DEFAULT_CHECK_LIMITS: CheckRequestLimits = Object.freeze({ maxHeaders: 256 });

const ADDRESS = 'attributes.source.address.socket_address.address';

interface Draft {
  sourceAddress?: string;
  http?: HttpAttributes;
  extensions: Map<string, string>;
}

export function decodeCheckRequest(bytes: Uint8Array, limits: CheckRequestLimits = DEFAULT_CHECK_LIMITS): CheckAttributes {
  const top = new ProtoReader(bytes, 'CheckRequest');
  const draft: Draft = { extensions: new Map() };
  try {
    while (top.next()) if (top.number === 1) attributes(top.sub('attributes'), draft, limits);
  } catch (err) {
    throw err instanceof ProtobufError ? new InvalidRequestError(err.message) : err;
  }
  if (draft.http === undefined) {
    throw new InvalidRequestError('CheckRequest has no attributes.request.http: only HTTP requests (envoy.filters.http.ext_authz) can be checked');
  }
  return { ...(draft.sourceAddress !== undefined ? { sourceAddress: draft.sourceAddress } : {}), http: draft.http, contextExtensions: draft.extensions };
}

function attributes(c: ProtoReader, draft: Draft, limits: CheckRequestLimits): void {
  while (c.next()) {
    if (c.number === 1) {
      const address = sourceAddress(c.sub('source'));
      if (address !== undefined) draft.sourceAddress = address;
    } else if (c.number === 4) {
      const r = c.sub('request');
      while (r.next()) if (r.number === 2) draft.http = httpRequest(r.sub('http'), limits);
    } else if (c.number === 10) {
      if (draft.extensions.size >= limits.maxHeaders) {
        throw new RequestTooLargeError(`CheckRequest has more than ${limits.maxHeaders} context_extensions (AUTHZ_MAX_HEADERS)`);
      }
      const [k, v] = c.mapEntry('context_extensions');
      draft.extensions.set(k, v);
    }
  }
}

/** attributes.source.address.socket_address.address, validated; undefined for a pipe or no address. */
function sourceAddress(peer: ProtoReader): string | undefined {
  let address: string | undefined;
  while (peer.next()) {
    if (peer.number !== 1) continue;
    const a = peer.sub('address');
    while (a.next()) {
      if (a.number !== 1) continue; // pipe (2) or internal (3): not an IP
      const s = a.sub('socket_address');
      while (s.next()) if (s.number === 2) address = s.text('address');
    }
  }
  if (address === undefined || address === '') return undefined;
  if (parseIp(address) === undefined) {
    // Shown well-formed: a lone surrogate (an escaped raw byte) would make grpc-js fail to send the status.
    const shown = wellFormed(address.length > 64 ? `${address.slice(0, 64)}…` : address);
    throw new InvalidRequestError(`${ADDRESS}: '${shown}' is not an IP address`);
  }
  return address;
}

function httpRequest(c: ProtoReader, limits: CheckRequestLimits): HttpAttributes {
  let id = '';
  let method = '';
  let path = '';
  let host = '';
  let scheme = '';
  let protocol = '';
  const headers = new Map<string, string>();
  let count = 0;
  const tooMany = () => new RequestTooLargeError(`CheckRequest has more than ${limits.maxHeaders} request headers (AUTHZ_MAX_HEADERS)`);
  while (c.next()) {
    switch (c.number) {
      case 1:
        id = c.text('id');
        break;
      case 2:
        method = c.text('method');
        break;
      case 3: {
        if (++count > limits.maxHeaders) throw tooMany();
        const [k, v] = c.mapEntry('headers');
        headers.set(k.toLowerCase(), v); // a map: a repeated key replaces, as protobuf maps do
        break;
      }
      case 4:
        path = c.text('path');
        break;
      case 5:
        host = c.text('host');
        break;
      case 6:
        scheme = c.text('scheme');
        break;
      case 10:
        protocol = c.text('protocol');
        break;
      case 13: {
        const m = c.sub('header_map');
        while (m.next()) {
          if (m.number !== 1) continue;
          if (++count > limits.maxHeaders) throw tooMany();
          rawHeader(m.sub('headers'), headers);
        }
        break;
      }
      default:
        break;
    }
  }
  return { id, method, path, host, scheme, protocol, headers };
}

/**
 * One header of header_map (encode_raw_headers: only key and raw_value are set, and names repeat): repeated
 * values are joined as Envoy joins them in `headers` (cookies with '; ').
 */
function rawHeader(h: ProtoReader, headers: Map<string, string>): void {
  let key = '';
  let value: string | undefined;
  let raw: string | undefined;
  while (h.next()) {
    if (h.number === 1) key = h.text('key');
    else if (h.number === 2) value = h.text('value');
    else if (h.number === 3) raw = h.text('raw_value');
  }
  const name = key.toLowerCase();
  const v = raw ?? value ?? '';
  const earlier = headers.get(name);
  headers.set(name, earlier === undefined ? v : `${earlier}${name === 'cookie' ? '; ' : ','}${v}`);
}
