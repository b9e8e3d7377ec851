/**
 * Loads our own .proto files (proto/) once. keepCase keeps Envoy's snake_case field names; longs as
 * strings (Duration.seconds, UInt64Value); enums as names; defaults so absent scalars read as 0/''.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

export interface LoadedProtos {
  readonly rls: grpc.ServiceDefinition;
  /**
   * The RLS service as the server registers it: the request is handed over as raw bytes, decoded by
   * decode-request.ts (a throwing grpc-js deserializer would answer INTERNAL, not INVALID_ARGUMENT); the
   * response is handed over already encoded (encode-response.ts).
   */
  readonly rlsServer: grpc.ServiceDefinition;
  readonly health: grpc.ServiceDefinition;
}

let cached: LoadedProtos | undefined;

function service(defs: grpc.GrpcObject, path: string): grpc.ServiceDefinition {
  let node: unknown = defs;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)[part];
  const ctor = node as { service?: grpc.ServiceDefinition } | undefined;
  if (ctor?.service === undefined) throw new Error(`service ${path} not found in ${PROTO_ROOT}`);
  return ctor.service;
}

export function loadProtos(): LoadedProtos {
  if (cached !== undefined) return cached;
  const defs = grpc.loadPackageDefinition(
    protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], LOADER_OPTIONS),
  );
  const rls = service(defs, 'envoy.service.ratelimit.v3.RateLimitService');
  cached = {
    rls,
    rlsServer: { ShouldRateLimit: { ...rls.ShouldRateLimit!, requestDeserialize: (bytes: Buffer) => bytes, responseSerialize: (bytes: Buffer) => bytes } },
    health: service(defs, 'grpc.health.v1.Health'),
  };
  return cached;
}

/** A generic client constructor for a loaded service (used by the CLI and the tests). */
export function clientFor(def: grpc.ServiceDefinition, name: string): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(def, name);
}
