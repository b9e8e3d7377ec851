/**
 * grpc.health.v1.Health (Check, Watch, List) on the lean transport, over HealthState (health.ts), with the
 * three messages encoded and decoded here (proto/grpc/health/v1).
 */
import type { HealthState, ServingStatus } from './grpc-health.js';
import { LEN, ProtobufError, ProtoReader } from '../../protobuf/reader.js';
import { lenFieldSize, ProtoWriter, utf8Length } from '../../protobuf/writer.js';
import { Code, GrpcStatusError } from '../grpc/lean/grpc-wire.js';
import type { RouteTable } from '../grpc/lean/routes.js';

const STATUS_NUMBER: Readonly<Record<ServingStatus, number>> = { SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };
const PREFIX = '/grpc.health.v1.Health/';

/** HealthCheckRequest.service (field 1); other fields skipped; malformed → INVALID_ARGUMENT. */
export function decodeHealthRequest(bytes: Buffer): string {
  const r = new ProtoReader(bytes, 'HealthCheckRequest');
  let service = '';
  try {
    while (r.next()) if (r.number === 1 && r.wireType === LEN) service = r.utf8();
  } catch (err) {
    throw err instanceof ProtobufError ? new GrpcStatusError(Code.INVALID_ARGUMENT, err.message) : err;
  }
  return service;
}

export function encodeHealthResponse(status: ServingStatus): Buffer {
  return Buffer.from([0x08, STATUS_NUMBER[status]]);
}

function encodeList(entries: readonly [string, ServingStatus][]): Buffer {
  let size = 0;
  const sizes = entries.map(([name]) => {
    const n = utf8Length(name);
    size += lenFieldSize(lenFieldSize(n) + lenFieldSize(2));
    return n;
  });
  const w = new ProtoWriter(size);
  entries.forEach(([name, status], i) => {
    const n = sizes[i]!;
    w.header(1, lenFieldSize(n) + lenFieldSize(2));
    w.string(1, name, n);
    w.header(2, 2);
    w.tag(1, 0);
    w.varint(STATUS_NUMBER[status]);
  });
  return w.buf;
}

export function addHealthRoutes(routes: RouteTable, health: HealthState): void {
  routes.unary.set(`${PREFIX}Check`, (bytes) => {
    const service = decodeHealthRequest(bytes);
    const s = health.of(service);
    if (s === 'SERVICE_UNKNOWN') return Promise.reject(new GrpcStatusError(Code.NOT_FOUND, `unknown service '${service}'`));
    return Promise.resolve(encodeHealthResponse(s));
  });
  routes.unary.set(`${PREFIX}List`, () => Promise.resolve(encodeList(health.entries())));
  routes.streaming.set(`${PREFIX}Watch`, (bytes, sink, call) => {
    const service = decodeHealthRequest(bytes);
    const stop = health.watch(service, { write: (m) => sink.write(encodeHealthResponse(m.status)), end: () => sink.end() });
    call.signal.addEventListener('abort', stop, { once: true });
  });
}
