/**
 * doorman.Capacity on the gRPC port: each method as bytes → bytes (decode with the required-field checks,
 * decide, encode; the hand-written codec of wire-decode.ts and wire-encode.ts, which gives protobufjs's
 * objects and bytes without its per-message cost), as routes by path: a malformed request is INVALID_ARGUMENT.
 */
import { InvalidRequestError, RequestTooLargeError } from '../vocab/errors.js';
import { CAPACITY_METHODS, CAPACITY_SERVICE, type CapacityMethod } from './doorman-messages.js';
import type * as M from './doorman-messages.js';
import { decodeDiscoveryRequest, decodeGetCapacityRequest, decodeGetServerCapacityRequest, decodeReleaseCapacityRequest } from './wire-decode.js';
import { encodeDiscoveryResponse, encodeGetCapacityResponse, encodeGetServerCapacityResponse, encodeReleaseCapacityResponse } from './wire-encode.js';

export type BytesHandler = (request: Buffer) => Promise<Uint8Array>;

/**
 * What answers the four methods: the memory store's CapacityServer synchronously (no promise on its path), or
 * the Redis store (redis-capacity.ts) with promises.
 */
export interface CapacityAnswers {
  discovery(): M.DiscoveryResponse;
  getCapacity(req: M.GetCapacityRequest): M.GetCapacityResponse | Promise<M.GetCapacityResponse>;
  getServerCapacity(req: M.GetServerCapacityRequest): M.GetServerCapacityResponse | Promise<M.GetServerCapacityResponse>;
  releaseCapacity(req: M.ReleaseCapacityRequest): M.ReleaseCapacityResponse | Promise<M.ReleaseCapacityResponse>;
}

/** The answer of one method to its decoded request. */
function answer(server: CapacityAnswers, method: CapacityMethod, request: unknown): unknown {
  switch (method) {
    case 'Discovery':
      return server.discovery();
    case 'GetCapacity':
      return server.getCapacity(request as M.GetCapacityRequest);
    case 'GetServerCapacity':
      return server.getServerCapacity(request as M.GetServerCapacityRequest);
    case 'ReleaseCapacity':
      return server.releaseCapacity(request as M.ReleaseCapacityRequest);
  }
}

interface Codec {
  decode(bytes: Buffer): unknown;
  encode(message: unknown): Uint8Array;
}

const CODECS: Record<CapacityMethod, Codec> = {
  Discovery: { decode: decodeDiscoveryRequest, encode: (m) => encodeDiscoveryResponse(m as M.DiscoveryResponse) },
  GetCapacity: { decode: decodeGetCapacityRequest, encode: (m) => encodeGetCapacityResponse(m as M.GetCapacityResponse) },
  GetServerCapacity: { decode: decodeGetServerCapacityRequest, encode: (m) => encodeGetServerCapacityResponse(m as M.GetServerCapacityResponse) },
  ReleaseCapacity: { decode: decodeReleaseCapacityRequest, encode: (m) => encodeReleaseCapacityResponse(m as M.ReleaseCapacityResponse) },
};

/**
 * Path (`/doorman.Capacity/GetCapacity`) → handler, one per method; a request over `maxBytes`
 * (CAPACITY_MAX_REQUEST_BYTES) is RESOURCE_EXHAUSTED, whatever the transport let through.
 */
export function capacityRoutes(server: CapacityAnswers, maxBytes = Infinity): Map<string, BytesHandler> {
  const routes = new Map<string, BytesHandler>();
  for (const method of CAPACITY_METHODS) {
    const codec = CODECS[method];
    routes.set(`/${CAPACITY_SERVICE}/${method}`, (bytes) => {
      if (bytes.length > maxBytes)
        return Promise.reject(new RequestTooLargeError(`${method} request of ${bytes.length} bytes is larger than ${maxBytes} (CAPACITY_MAX_REQUEST_BYTES)`));
      let request: unknown;
      try {
        request = codec.decode(bytes);
      } catch (err) {
        return Promise.reject(new InvalidRequestError(`malformed ${method} request: ${err instanceof Error ? err.message : String(err)}`));
      }
      try {
        const result = answer(server, method, request);
        return result instanceof Promise ? result.then((r) => codec.encode(r)) : Promise.resolve(codec.encode(result));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }
  return routes;
}
