/**
 * A real gRPC server speaking doorman.Capacity that is never the master: it answers every call with only
 * `mastership` naming another address, as a Doorman server that lost (or never won) the election does. Used to
 * prove that the capacity client follows redirects over real sockets (two real Doorman servers would need etcd).
 * Counts the calls it answered, by method.
 */
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_ROOT = fileURLToPath(new URL('../../proto', import.meta.url));

export interface Redirector {
  readonly address: string;
  readonly calls: Record<string, number>;
  /** The address named as master from now on ('' for "no master known"). */
  setMaster(address: string): void;
  close(): Promise<void>;
}

export async function startRedirector(masterAddress: string): Promise<Redirector> {
  const definition = protoLoader.loadSync('doorman/doorman.proto', { keepCase: true, longs: Number, defaults: false, includeDirs: [PROTO_ROOT] });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { doorman: { Capacity: grpc.ServiceClientConstructor } };
  const calls: Record<string, number> = {};
  let master = masterAddress;
  const answer =
    (method: string, body: () => object) =>
    (_call: unknown, callback: grpc.sendUnaryData<object>): void => {
      calls[method] = (calls[method] ?? 0) + 1;
      callback(null, body());
    };
  const mastership = (): object => (master === '' ? {} : { master_address: master });
  const server = new grpc.Server();
  server.addService(loaded.doorman.Capacity.service, {
    Discovery: answer('Discovery', () => ({ mastership: mastership(), is_master: false })),
    GetCapacity: answer('GetCapacity', () => ({ mastership: mastership() })),
    GetServerCapacity: answer('GetServerCapacity', () => ({ mastership: mastership() })),
    ReleaseCapacity: answer('ReleaseCapacity', () => ({ mastership: mastership() })),
  });
  const port = await new Promise<number>((ok, fail) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? fail(error) : ok(bound))),
  );
  return {
    address: `127.0.0.1:${port}`,
    calls,
    setMaster: (address) => (master = address),
    close: () => new Promise<void>((ok) => server.tryShutdown(() => ok())),
  };
}
