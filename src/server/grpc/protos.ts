/**
 * Loads our own .proto files (proto/) once. keepCase keeps Envoy's snake_case field names; longs as
 * strings (Duration.seconds, UInt64Value); enums as names; defaults so absent scalars read as 0/''.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export const PROTO_ROOT = fileURLToPath(new URL('../../../proto', import.meta.url));

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
  const defs = grpc.loadPackageDefinition(protoLoader.loadSync(['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'], LOADER_OPTIONS));
  const rls = service(defs, 'envoy.service.ratelimit.v3.RateLimitService');
  cached = {
    rls,
    health: service(defs, 'grpc.health.v1.Health'),
  };
  return cached;
}

/** A generic client constructor for a loaded service (used by the CLI and the tests). */
export function clientFor(def: grpc.ServiceDefinition, name: string): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(def, name);
}
