/**
 * doorman.Capacity requests written byte by byte (ids as raw bytes, which protobufjs cannot send when they are
 * not UTF-8), and the service's byte routes (src/capacity/rpc.ts) on the memory store or on a Redis replica, so
 * that a test sends exactly the bytes a hostile or careless client sends and reads the answer as bytes.
 */
import { capacityRoutes, type BytesHandler } from '../../src/capacity/rpc.js';
import { doormanDefinition, CAPACITY_SERVICE, type CapacityMethod } from '../../src/capacity/doorman-messages.js';
import type * as M from '../../src/capacity/doorman-messages.js';
import type * as protoLoader from '@grpc/proto-loader';
import type { CapacityAnswers } from '../../src/capacity/rpc.js';

type Id = string | Buffer;
const bytesOf = (id: Id): Buffer => (typeof id === 'string' ? Buffer.from(id, 'utf8') : id);

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(Math.trunc(n)));
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

const len = (field: number, body: Buffer): Buffer => Buffer.concat([varint((field << 3) | 2), varint(body.length), body]);
const int = (field: number, n: number): Buffer => Buffer.concat([varint(field << 3), varint(n)]);
function double(field: number, x: number): Buffer {
  const b = Buffer.alloc(9);
  b[0] = (field << 3) | 1;
  b.writeDoubleLE(x, 1);
  return b;
}
const lease = (capacity: number): Buffer => Buffer.concat([int(1, 0), int(2, 0), double(3, capacity)]);

export interface AskBytes {
  readonly resource: Id;
  readonly wants: number;
  readonly priority?: number;
  readonly has?: number;
}

export function getCapacityBytes(client: Id, asks: readonly AskBytes[]): Buffer {
  return Buffer.concat([
    len(1, bytesOf(client)),
    ...asks.map((a) =>
      len(2, Buffer.concat([len(1, bytesOf(a.resource)), int(2, a.priority ?? 1), ...(a.has === undefined ? [] : [len(3, lease(a.has))]), double(4, a.wants)])),
    ),
  ]);
}

export function getServerCapacityBytes(server: Id, resource: Id, bands: readonly { priority: number; num_clients: number; wants: number }[]): Buffer {
  return Buffer.concat([
    len(1, bytesOf(server)),
    len(
      2,
      Buffer.concat([len(1, bytesOf(resource)), ...bands.map((b) => len(3, Buffer.concat([int(1, b.priority), int(2, b.num_clients), double(3, b.wants)])))]),
    ),
  ]);
}

export function releaseBytes(client: Id, resources: readonly Id[]): Buffer {
  return Buffer.concat([len(1, bytesOf(client)), ...resources.map((r) => len(2, bytesOf(r)))]);
}

/** The byte routes of a capacity service, with the answers decoded as protobufjs reads them. */
export class ByteCaller {
  private readonly routes: Map<string, BytesHandler>;

  constructor(answers: CapacityAnswers, maxBytes?: number) {
    this.routes = capacityRoutes(answers, maxBytes);
  }

  raw(method: CapacityMethod, request: Buffer): Promise<Buffer> {
    return this.routes.get(`/${CAPACITY_SERVICE}/${method}`)!(request).then((b) => Buffer.from(b));
  }

  async get(client: Id, asks: readonly AskBytes[]): Promise<number[]> {
    const res = decodeResponse<M.GetCapacityResponse>('GetCapacity', await this.raw('GetCapacity', getCapacityBytes(client, asks)));
    return res.response.map((r) => r.gets.capacity);
  }

  async release(client: Id, resources: readonly Id[]): Promise<void> {
    await this.raw('ReleaseCapacity', releaseBytes(client, resources));
  }
}

export function decodeResponse<T>(method: CapacityMethod, bytes: Buffer): T {
  const service = doormanDefinition()[CAPACITY_SERVICE] as protoLoader.ServiceDefinition;
  return service[method]!.responseDeserialize(bytes) as T;
}
