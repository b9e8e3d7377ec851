/**
 * The doorman.Capacity messages as plain objects (field names as in the .proto, keepCase), and the codec:
 * protobufjs through @grpc/proto-loader, with int64 read as Number (whole seconds and client counts stay far
 * below 2^53). Decoding refuses a message without its `required` fields (protobufjs checks them), as Doorman's
 * Go peers do; every response we build sets all of its required fields.
 */
import { fileURLToPath } from 'node:url';
import * as protoLoader from '@grpc/proto-loader';
import type { AlgorithmConfig } from './config.js';

export interface Lease {
  expiry_time: number;
  refresh_interval: number;
  capacity: number;
}
export interface ResourceRequest {
  resource_id: string;
  priority: number;
  has?: Lease | null;
  wants: number;
}
export interface GetCapacityRequest {
  client_id: string;
  resource: ResourceRequest[];
}
export interface ResourceResponse {
  resource_id: string;
  gets: Lease;
  safe_capacity?: number;
}
export interface Mastership {
  master_address?: string;
}
export interface GetCapacityResponse {
  response: ResourceResponse[];
  mastership?: Mastership;
}
export interface PriorityBandAggregate {
  priority: number;
  num_clients: number;
  wants: number;
}
export interface ServerCapacityResourceRequest {
  resource_id: string;
  has?: Lease | null;
  wants: PriorityBandAggregate[];
}
export interface GetServerCapacityRequest {
  server_id: string;
  resource: ServerCapacityResourceRequest[];
}
export interface NamedParameter {
  name: string;
  value?: string;
}
export interface Algorithm {
  kind: string;
  lease_length: number;
  refresh_interval: number;
  parameters: NamedParameter[];
  learning_mode_duration?: number;
}
export interface ServerCapacityResourceResponse {
  resource_id: string;
  gets: Lease;
  algorithm?: Algorithm;
  safe_capacity?: number;
}
export interface GetServerCapacityResponse {
  response: ServerCapacityResourceResponse[];
  mastership?: Mastership;
}
export interface ReleaseCapacityRequest {
  client_id: string;
  resource_id: string[];
}
export interface ReleaseCapacityResponse {
  mastership?: Mastership;
}
export interface DiscoveryResponse {
  mastership: Mastership;
  is_master: boolean;
}

export function algorithmMessage(a: AlgorithmConfig): Algorithm {
  return {
    kind: a.wireKind,
    lease_length: a.leaseLength,
    refresh_interval: a.refreshInterval,
    parameters: a.parameters.map((p) => ({ name: p.name, value: p.value })),
    learning_mode_duration: a.learningModeDuration,
  };
}

export const DOORMAN_PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));
export const CAPACITY_SERVICE = 'doorman.Capacity';
export const CAPACITY_METHODS = ['Discovery', 'GetCapacity', 'GetServerCapacity', 'ReleaseCapacity'] as const;
export type CapacityMethod = (typeof CAPACITY_METHODS)[number];

/** Options for the doorman package: snake_case names, int64 as numbers, enums as names, arrays always present. */
export const DOORMAN_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  arrays: true,
  includeDirs: [DOORMAN_PROTO_ROOT],
};

let cached: protoLoader.PackageDefinition | undefined;

export function doormanDefinition(): protoLoader.PackageDefinition {
  return (cached ??= protoLoader.loadSync('doorman/doorman.proto', DOORMAN_LOADER_OPTIONS));
}

export interface MethodCodec {
  decode(bytes: Buffer): unknown;
  encode(message: unknown): Buffer;
  /** The request as a client sends it (benchmarks, tests). */
  encodeRequest(message: unknown): Buffer;
}

/** The request decoder and response encoder of one method of doorman.Capacity. */
export function methodCodec(method: CapacityMethod): MethodCodec {
  const service = doormanDefinition()[CAPACITY_SERVICE] as protoLoader.ServiceDefinition;
  const def = service[method]!;
  return {
    decode: (bytes) => def.requestDeserialize(bytes),
    encode: (message) => def.responseSerialize(message as object),
    encodeRequest: (message) => def.requestSerialize(message as object),
  };
}
