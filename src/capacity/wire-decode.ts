/**
 * The doorman.Capacity requests decoded by hand, straight into the plain objects of doorman-messages.ts: the same
 * objects protobufjs (through proto-loader, DOORMAN_LOADER_OPTIONS) makes of the same bytes, without its
 * generic reader, its message classes and the toObject copy (test/unit/capacity/capacity-wire.test.ts compares the two
 * on random and hand-made messages). As protobufjs: int64 read as a Number (two's complement for negatives),
 * a repeated field always an array, a field given twice the last one kept, unknown fields (groups included)
 * skipped, and a message without one of its `required` fields refused ("missing required 'name'"). Unlike
 * protobufjs, a known field with the wrong wire type is refused, not read as garbage, and ids are kept as the
 * bytes they are (ids.ts), where protobufjs reads bytes that are not UTF-8 as U+FFFD.
 */
import { LEN, ProtobufError, ProtoReader } from '../protobuf/reader.js';
import { idFromBytes } from './ids.js';
import type * as M from './doorman-messages.js';

export class WireError extends Error {}

/** The current length-delimited field as a client or resource id: bytes, kept byte for byte (ids.ts). */
function idOf(r: ProtoReader): string {
  r.expect(LEN);
  return idFromBytes(r.buf as Buffer, r.start, r.stop);
}

/** Decodes one request: a malformed message or a missing required field is a WireError. */
function decoding<T>(buf: Buffer, name: string, decode: (r: ProtoReader) => T): T {
  try {
    return decode(new ProtoReader(buf, name, true));
  } catch (err) {
    throw err instanceof ProtobufError ? new WireError(err.detail) : err;
  }
}

function missing(name: string): never {
  throw new WireError(`missing required '${name}'`);
}

function lease(r: ProtoReader): M.Lease {
  let expiry: number | undefined;
  let refresh: number | undefined;
  let capacity: number | undefined;
  while (r.next()) {
    if (r.number === 1) expiry = r.int64();
    else if (r.number === 2) refresh = r.int64();
    else if (r.number === 3) capacity = r.double();
  }
  if (expiry === undefined) missing('expiry_time');
  if (refresh === undefined) missing('refresh_interval');
  if (capacity === undefined) missing('capacity');
  return { expiry_time: expiry, refresh_interval: refresh, capacity };
}

function resourceRequest(r: ProtoReader): M.ResourceRequest {
  let id: string | undefined;
  let priority: number | undefined;
  let has: M.Lease | undefined;
  let wants: number | undefined;
  while (r.next()) {
    if (r.number === 1) id = idOf(r);
    else if (r.number === 2) priority = r.int64();
    else if (r.number === 3) has = lease(r.sub('has'));
    else if (r.number === 4) wants = r.double();
  }
  if (id === undefined) missing('resource_id');
  if (priority === undefined) missing('priority');
  if (wants === undefined) missing('wants');
  return has === undefined ? { resource_id: id, priority, wants } : { resource_id: id, priority, has, wants };
}

export function decodeGetCapacityRequest(buf: Buffer): M.GetCapacityRequest {
  return decoding(buf, 'GetCapacityRequest', getCapacityRequest);
}

function getCapacityRequest(r: ProtoReader): M.GetCapacityRequest {
  let client: string | undefined;
  const resource: M.ResourceRequest[] = [];
  while (r.next()) {
    if (r.number === 1) client = idOf(r);
    else if (r.number === 2) resource.push(resourceRequest(r.sub('resource')));
  }
  if (client === undefined) missing('client_id');
  return { client_id: client, resource };
}

function band(r: ProtoReader): M.PriorityBandAggregate {
  let priority: number | undefined;
  let clients: number | undefined;
  let wants: number | undefined;
  while (r.next()) {
    if (r.number === 1) priority = r.int64();
    else if (r.number === 2) clients = r.int64();
    else if (r.number === 3) wants = r.double();
  }
  if (priority === undefined) missing('priority');
  if (clients === undefined) missing('num_clients');
  if (wants === undefined) missing('wants');
  return { priority, num_clients: clients, wants };
}

function serverResourceRequest(r: ProtoReader): M.ServerCapacityResourceRequest {
  let id: string | undefined;
  let has: M.Lease | undefined;
  const wants: M.PriorityBandAggregate[] = [];
  while (r.next()) {
    if (r.number === 1) id = idOf(r);
    else if (r.number === 2) has = lease(r.sub('has'));
    else if (r.number === 3) wants.push(band(r.sub('wants')));
  }
  if (id === undefined) missing('resource_id');
  return has === undefined ? { resource_id: id, wants } : { resource_id: id, has, wants };
}

export function decodeGetServerCapacityRequest(buf: Buffer): M.GetServerCapacityRequest {
  return decoding(buf, 'GetServerCapacityRequest', getServerCapacityRequest);
}

function getServerCapacityRequest(r: ProtoReader): M.GetServerCapacityRequest {
  let server: string | undefined;
  const resource: M.ServerCapacityResourceRequest[] = [];
  while (r.next()) {
    if (r.number === 1) server = idOf(r);
    else if (r.number === 2) resource.push(serverResourceRequest(r.sub('resource')));
  }
  if (server === undefined) missing('server_id');
  return { server_id: server, resource };
}

export function decodeReleaseCapacityRequest(buf: Buffer): M.ReleaseCapacityRequest {
  return decoding(buf, 'ReleaseCapacityRequest', releaseCapacityRequest);
}

function releaseCapacityRequest(r: ProtoReader): M.ReleaseCapacityRequest {
  let client: string | undefined;
  const ids: string[] = [];
  while (r.next()) {
    if (r.number === 1) client = idOf(r);
    else if (r.number === 2) ids.push(idOf(r));
  }
  if (client === undefined) missing('client_id');
  return { client_id: client, resource_id: ids };
}

/** DiscoveryRequest has no fields: anything well-formed is skipped. */
export function decodeDiscoveryRequest(buf: Buffer): Record<string, never> {
  return decoding(buf, 'DiscoveryRequest', (r) => {
    while (r.next());
    return {};
  });
}
