/**
 * Real gRPC servers speaking doorman.Capacity for the capacity client's tests (over real sockets, not a mock of the
 * client): a scripted one whose answers the test decides (GetCapacity and ReleaseCapacity requests are recorded),
 * and a redirector that is never the master: it answers every call with only `mastership` naming another address,
 * as a Doorman server that lost (or never won) the election does — two real Doorman servers would need etcd.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

type Answer = (request: Record<string, unknown>) => object | grpc.ServiceError;

export interface ScriptedServer {
  readonly address: string;
  /** Calls answered, by method. */
  readonly calls: Record<string, number>;
  /** Requests received, by method, decoded (keepCase, int64 as numbers). */
  readonly requests: Record<string, Record<string, unknown>[]>;
  close(): Promise<void>;
}

/** A doorman.Capacity server answering each method with `answers[method]` (an object, or an error to fail the call). */
export async function startCapacityServer(
  answers: Partial<Record<'Discovery' | 'GetCapacity' | 'GetServerCapacity' | 'ReleaseCapacity', Answer>>,
): Promise<ScriptedServer> {
  const definition = protoLoader.loadSync('doorman/doorman.proto', { keepCase: true, longs: Number, defaults: false, includeDirs: [PROTO_ROOT] });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } };
  const calls: Record<string, number> = {};
  const requests: Record<string, Record<string, unknown>[]> = {};
  const handler =
    (method: 'Discovery' | 'GetCapacity' | 'GetServerCapacity' | 'ReleaseCapacity') =>
    (call: { request: Record<string, unknown> }, callback: grpc.sendUnaryData<object>): void => {
      calls[method] = (calls[method] ?? 0) + 1;
      (requests[method] ??= []).push(call.request);
      const answer = answers[method]?.(call.request) ?? (method === 'Discovery' ? { mastership: {}, is_master: true } : {});
      if ('code' in answer && typeof answer.code === 'number') callback(answer as grpc.ServiceError);
      else callback(null, answer);
    };
  const server = new grpc.Server();
  server.addService(loaded.doorman.Capacity.service, {
    Discovery: handler('Discovery'),
    GetCapacity: handler('GetCapacity'),
    GetServerCapacity: handler('GetServerCapacity'),
    ReleaseCapacity: handler('ReleaseCapacity'),
  });
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? fail(error) : ok(bound))),
  );
  return { address: `127.0.0.1:${port}`, calls, requests, close: () => new Promise<void>((ok) => server.tryShutdown(() => ok())) };
}

export interface Redirector extends ScriptedServer {
  /** The address named as master from now on ('' for "no master known"). */
  setMaster(address: string): void;
}

export async function startRedirector(masterAddress: string): Promise<Redirector> {
  let master = masterAddress;
  const mastership = (): object => ({ mastership: master === '' ? {} : { master_address: master } });
  const server = await startCapacityServer({
    Discovery: () => ({ ...mastership(), is_master: false }),
    GetCapacity: mastership,
    GetServerCapacity: mastership,
    ReleaseCapacity: mastership,
  });
  return { ...server, setMaster: (address) => (master = address) };
}
