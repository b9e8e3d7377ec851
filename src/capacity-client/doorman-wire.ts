/**
 * The Doorman wire protocol (proto/doorman/doorman.proto, proto2, package doorman) as the client sees it:
 * message shapes as @grpc/proto-loader decodes them (keepCase: Doorman's snake_case names; int64 as numbers —
 * whole seconds, far below 2^53) and one generic client constructor for `doorman.Capacity`.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** The repository's proto/ folder: two levels above both src/capacity-client/ and dist/capacity-client/. */
const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

export interface WireLease {
  expiry_time: number;
  refresh_interval: number;
  capacity: number;
}

export interface WireResourceRequest {
  resource_id: string;
  priority: number;
  has?: WireLease;
  wants: number;
}

export interface WireGetCapacityRequest {
  client_id: string;
  resource: WireResourceRequest[];
}

export interface WireResourceResponse {
  resource_id: string;
  gets?: WireLease | null;
  safe_capacity?: number | null;
}

export interface WireMastership {
  master_address?: string | null;
}

export interface WireGetCapacityResponse {
  response?: WireResourceResponse[];
  mastership?: WireMastership | null;
}

export interface WireReleaseCapacityResponse {
  mastership?: WireMastership | null;
}

export interface WireDiscoveryResponse {
  mastership?: WireMastership | null;
  is_master?: boolean;
}

let cached: grpc.ServiceClientConstructor | undefined;

/** The generic client constructor of `doorman.Capacity` (loaded once). */
export function capacityClientConstructor(): grpc.ServiceClientConstructor {
  if (cached !== undefined) return cached;
  const definition = protoLoader.loadSync('doorman/doorman.proto', {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: false,
    oneofs: true,
    includeDirs: [PROTO_ROOT],
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } };
  cached = loaded.doorman.Capacity;
  return cached;
}
