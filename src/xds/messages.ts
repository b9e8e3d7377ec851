/**
 * envoy.service.discovery.v3 DiscoveryRequest (encoded) and DiscoveryResponse (decoded), with the
 * config.core.v3 Node and google.protobuf.Struct they carry. Field numbers as in Envoy's discovery.proto and
 * base.proto (go-control-plane/envoy v1.37.0: service/discovery/v3/discovery.pb.go, config/core/v3/base.pb.go).
 */
import { ProtoReader, ProtoWriter, VARINT } from './wire.js';

export const RATE_LIMIT_CONFIG_TYPE = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig';
export const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** Deepest Struct/List nesting accepted in a resource's metadata. */
const MAX_STRUCT_DEPTH = 32;

export interface NodeInfo {
  readonly id: string;
  /** String values, as the reference sends CONFIG_GRPC_XDS_NODE_METADATA. */
  readonly metadata: ReadonlyMap<string, string>;
  readonly userAgentName: string;
  readonly userAgentVersion: string;
}

export interface DiscoveryRequest {
  readonly versionInfo: string;
  readonly node: NodeInfo;
  readonly typeUrl: string;
  readonly responseNonce: string;
  /** A NACK: google.rpc.Status message (code 3, INVALID_ARGUMENT, as Envoy sends). */
  readonly errorDetail?: string;
}

export interface AnyResource {
  readonly typeUrl: string;
  readonly value: Uint8Array;
}

export interface DiscoveryResponse {
  readonly versionInfo: string;
  readonly resources: readonly AnyResource[];
  readonly typeUrl: string;
  readonly nonce: string;
}

function encodeStringValue(s: string): Buffer {
  return new ProtoWriter().string(3, s).finish(); // Value.string_value
}

function encodeNode(node: NodeInfo): Buffer {
  const w = new ProtoWriter().string(1, node.id);
  if (node.metadata.size > 0) {
    const struct = new ProtoWriter();
    for (const [k, v] of node.metadata) struct.bytes(1, new ProtoWriter().string(1, k).bytes(2, encodeStringValue(v)).finish());
    w.bytes(3, struct.finish());
  }
  return w.string(6, node.userAgentName).string(7, node.userAgentVersion).finish();
}

export function encodeDiscoveryRequest(r: DiscoveryRequest): Buffer {
  const w = new ProtoWriter().string(1, r.versionInfo).bytes(2, encodeNode(r.node)).string(4, r.typeUrl).string(5, r.responseNonce);
  if (r.errorDetail !== undefined) w.bytes(6, new ProtoWriter().int(1, 3).string(2, r.errorDetail).finish());
  return w.finish();
}

export function decodeDiscoveryResponse(buf: Uint8Array): DiscoveryResponse {
  const r = new ProtoReader(buf, 'DiscoveryResponse');
  let versionInfo = '';
  let typeUrl = '';
  let nonce = '';
  const resources: AnyResource[] = [];
  while (r.next()) {
    if (r.number === 1) versionInfo = r.text('version_info');
    else if (r.number === 2) {
      const a = r.sub('resources');
      let t = '';
      let value: Uint8Array = new Uint8Array(0);
      while (a.next()) {
        if (a.number === 1) t = a.text('type_url');
        else if (a.number === 2) value = a.bytes('value');
      }
      resources.push({ typeUrl: t, value });
    } else if (r.number === 4) typeUrl = r.text('type_url');
    else if (r.number === 5) nonce = r.text('nonce');
  }
  return { versionInfo, resources, typeUrl, nonce };
}

export type JsonValue = null | number | string | boolean | JsonValue[] | { [key: string]: JsonValue };

/** google.protobuf.Struct as a plain object. */
export function decodeStruct(r: ProtoReader, depth = 0): Record<string, JsonValue> {
  if (depth > MAX_STRUCT_DEPTH) throw new Error(`metadata nested deeper than ${MAX_STRUCT_DEPTH}`);
  const out: Record<string, JsonValue> = {};
  while (r.next()) {
    if (r.number !== 1) continue;
    const e = r.sub('Struct.fields');
    let key = '';
    let value: JsonValue = null;
    while (e.next()) {
      if (e.number === 1) key = e.text('key');
      else if (e.number === 2) value = decodeValue(e.sub('Value'), depth + 1);
    }
    out[key] = value;
  }
  return out;
}

function decodeValue(r: ProtoReader, depth: number): JsonValue {
  if (depth > MAX_STRUCT_DEPTH) throw new Error(`metadata nested deeper than ${MAX_STRUCT_DEPTH}`);
  let value: JsonValue = null;
  while (r.next()) {
    switch (r.number) {
      case 1: value = null; break;
      case 2: value = r.double('number_value'); break;
      case 3: value = r.text('string_value'); break;
      case 4: value = r.wireType === VARINT && r.varint !== 0; break;
      case 5: value = decodeStruct(r.sub('struct_value'), depth + 1); break;
      case 6: {
        const list: JsonValue[] = [];
        const l = r.sub('list_value');
        while (l.next()) if (l.number === 1) list.push(decodeValue(l.sub('Value'), depth + 1));
        value = list;
        break;
      }
      default: break;
    }
  }
  return value;
}
