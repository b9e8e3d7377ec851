/** The gRPC server: RateLimitService and Health on one port, plaintext HTTP/2 (a sidecar on loopback). */
import * as grpc from '@grpc/grpc-js';
import type { HealthState } from './health.js';
import { loadProtos } from './protos.js';

export interface GrpcServerOptions {
  readonly host: string;
  readonly port: number;
  readonly rls: grpc.UntypedServiceImplementation;
  readonly health: HealthState;
  /** Extra grpc-js server options (e.g. 'grpc.max_receive_message_length'). */
  readonly serverOptions?: grpc.ServerOptions;
}

export interface RunningGrpcServer {
  readonly port: number;
  /** Stops accepting calls, lets in-flight calls finish for at most graceMs, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const protos = loadProtos();
  const server = new grpc.Server({
    // Envoy multiplexes many calls on few connections; keep them alive and let many streams share one.
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_concurrent_streams': 10_000,
    ...options.serverOptions,
  });
  server.addService(protos.rlsServer, options.rls);
  server.addService(protos.health, options.health.handlers());
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${options.port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    port,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
