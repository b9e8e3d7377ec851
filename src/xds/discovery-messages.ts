/**
 * envoy.service.discovery.v3 DiscoveryRequest (encoded) and DiscoveryResponse (decoded), with the
 * config.core.v3 Node and google.protobuf.Struct they carry. Field numbers as in Envoy's discovery.proto and
 * base.proto (go-control-plane/envoy v1.37.0: service/discovery/v3/discovery.pb.go, config/core/v3/base.pb.go).
 */
import { ProtoReader, VARINT } from '../protobuf/reader.js';
import { lenFieldSize, ProtoWriter, utf8Length } from '../protobuf/writer.js';

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

/** Bytes a string field takes, left out when empty (proto3). */
function textSize(field: number, s: string): number {
  return s === '' ? 0 : lenFieldSize(utf8Length(s), field);
}

function writeText(w: ProtoWriter, field: number, s: string): void {
  if (s !== '') w.string(field, s, utf8Length(s));
}

/** A metadata entry of the Node's Struct: key (1) and a Value (2) with its string_value (3). */
function entrySize(key: string, value: string): number {
  return textSize(1, key) + lenFieldSize(textSize(3, value));
}

function metadataSize(metadata: ReadonlyMap<string, string>): number {
  let n = 0;
  for (const [k, v] of metadata) n += lenFieldSize(entrySize(k, v));
  return n;
}

function nodeSize(node: NodeInfo, metadata: number): number {
  return textSize(1, node.id) + (node.metadata.size > 0 ? lenFieldSize(metadata) : 0) + textSize(6, node.userAgentName) + textSize(7, node.userAgentVersion);
}

function writeNode(w: ProtoWriter, node: NodeInfo, metadata: number): void {
  writeText(w, 1, node.id);
  if (node.metadata.size > 0) {
    w.header(3, metadata);
    for (const [k, v] of node.metadata) {
      w.header(1, entrySize(k, v));
      writeText(w, 1, k);
      w.header(2, textSize(3, v));
      writeText(w, 3, v);
    }
  }
  writeText(w, 6, node.userAgentName);
  writeText(w, 7, node.userAgentVersion);
}

export function encodeDiscoveryRequest(r: DiscoveryRequest): Buffer {
  const metadata = metadataSize(r.node.metadata);
  const node = nodeSize(r.node, metadata);
  const status = r.errorDetail === undefined ? -1 : 2 + textSize(2, r.errorDetail);
  const w = new ProtoWriter(
    textSize(1, r.versionInfo) + lenFieldSize(node) + textSize(4, r.typeUrl) + textSize(5, r.responseNonce) + (status >= 0 ? lenFieldSize(status) : 0),
  );
  writeText(w, 1, r.versionInfo);
  w.header(2, node);
  writeNode(w, r.node, metadata);
  writeText(w, 4, r.typeUrl);
  writeText(w, 5, r.responseNonce);
  if (r.errorDetail !== undefined) {
    w.header(6, status); // google.rpc.Status: code 3 (INVALID_ARGUMENT), message
    w.tag(1, 0);
    w.varint(3);
    writeText(w, 2, r.errorDetail);
  }
  return w.buf;
}

export function decodeDiscoveryResponse(buf: Uint8Array): DiscoveryResponse {
  const r = new ProtoReader(buf, 'DiscoveryResponse');
  let versionInfo = '';
  let typeUrl = '';
  let nonce = '';
  const resources: AnyResource[] = [];
  while (r.next()) {
    if (r.number === 1) versionInfo = r.utf8('version_info');
    else if (r.number === 2) {
      const a = r.sub('resources');
      let t = '';
      let value: Uint8Array = new Uint8Array(0);
      while (a.next()) {
        if (a.number === 1) t = a.utf8('type_url');
        else if (a.number === 2) value = a.bytes('value');
      }
      resources.push({ typeUrl: t, value });
    } else if (r.number === 4) typeUrl = r.utf8('type_url');
    else if (r.number === 5) nonce = r.utf8('nonce');
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
    const e = r.sub('fields');
    let key = '';
    let value: JsonValue = null;
    while (e.next()) {
      if (e.number === 1) key = e.utf8('key');
      else if (e.number === 2) value = decodeValue(e.sub('value'), depth + 1);
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
      case 1:
        value = null;
        break;
      case 2:
        value = r.double('number_value');
        break;
      case 3:
        value = r.utf8('string_value');
        break;
      case 4:
        value = r.wireType === VARINT && r.varint !== 0;
        break;
      case 5:
        value = decodeStruct(r.sub('struct_value'), depth + 1);
        break;
      case 6: {
        const list: JsonValue[] = [];
        const l = r.sub('list_value');
        while (l.next()) if (l.number === 1) list.push(decodeValue(l.sub('values'), depth + 1));
        value = list;
        break;
      }
      default:
        break;
    }
  }
  return value;
}
