/**
 * doorman.Capacity on the gRPC port: each method as bytes → bytes (decode with the required-field checks,
 * decide, encode; the hand-written codec of wire-decode.ts and wire-encode.ts, which gives protobufjs's
 * objects and bytes without its per-message cost), offered to both transports: as lean routes by path, and
 * as a grpc-js service whose (de)serializers pass bytes through, so that a malformed request is
 * INVALID_ARGUMENT on both (a throwing grpc-js deserializer would answer INTERNAL).
 */
import * as grpc from '@grpc/grpc-js';
import { InvalidRequestError, RequestTooLargeError } from '../vocab/errors.js';
import { toGrpcError } from '../server/grpc-errors.js';
import { CAPACITY_METHODS, CAPACITY_SERVICE, type CapacityMethod } from './messages.js';
import type * as M from './messages.js';
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
      if (bytes.length > maxBytes) return Promise.reject(new RequestTooLargeError(`${method} request of ${bytes.length} bytes is larger than ${maxBytes} (CAPACITY_MAX_REQUEST_BYTES)`));
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

/** The same routes as a grpc-js service (definition + handlers). */
export function capacityGrpcService(routes: ReadonlyMap<string, BytesHandler>, onError?: (err: unknown, status: string) => void): { definition: grpc.ServiceDefinition; handlers: grpc.UntypedServiceImplementation } {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Uint8Array>> = {};
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const [path, handler] of routes) {
    const name = path.slice(path.lastIndexOf('/') + 1);
    definition[name] = {
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength),
      responseDeserialize: (b: Buffer) => b,
    };
    const unary: grpc.handleUnaryCall<Buffer, Uint8Array> = (call, callback) => {
      handler(call.request).then(
        (bytes) => callback(null, bytes),
        (err: unknown) => {
          const e = toGrpcError(err);
          onError?.(err, grpc.status[e.code]);
          callback(e);
        },
      );
    };
    handlers[name] = unary as grpc.UntypedHandleCall;
  }
  return { definition: definition, handlers };
}
