/**
 * The gRPC server: RateLimitService, Authorization (ext_authz, when given) and Health on one listener, TCP (host:port) or a Unix domain socket
 * (host `unix:/path`), plaintext HTTP/2 or TLS / mutual TLS when given credentials (see tls-credentials.ts).
 */
import * as grpc from '@grpc/grpc-js';
import { AUTHORIZATION_SERVICE } from './ext-authz-service.js';
import type { ConnectionGuard } from './guard/connection-guard.js';
import { http2ServersOf, liftResetBound, malformedTimeoutInterceptor, normalizeTimeouts } from './grpc-js-http2.js';
import type { HealthState } from './health.js';
import { loadProtos } from './protos.js';
import { prepareSocketPath, setSocketMode, unixSocketPath } from './unix-socket.js';

export interface GrpcServerOptions {
  /** An IP or name to listen on, or `unix:/path/to.sock` for a Unix domain socket (port then unused). */
  readonly host: string;
  readonly port: number;
  readonly rls: grpc.UntypedServiceImplementation;
  /** envoy.service.auth.v3.Authorization handlers (ext-authz-service.ts); absent = not served. */
  readonly authz?: grpc.UntypedServiceImplementation;
  readonly health: HealthState;
  /** More services on the same listener (doorman.Capacity). */
  readonly extraServices?: readonly { definition: grpc.ServiceDefinition; handlers: grpc.UntypedServiceImplementation }[];
  /** TLS (e.g. ReloadingServerCredentials); default plaintext. */
  readonly credentials?: grpc.ServerCredentials;
  /** Permissions of the Unix socket file (default 0o660). */
  readonly socketMode?: number;
  /** Extra grpc-js server options (e.g. 'grpc.max_receive_message_length'). */
  readonly serverOptions?: grpc.ServerOptions;
  /** Most concurrent streams per connection (default 1,000) and memory one connection may buffer, MiB (default 32). */
  readonly maxConcurrentStreams?: number;
  readonly maxSessionMemoryMb?: number;
  /** Connection bounds (count, message timeout, idle close, rapid reset); none when absent. */
  readonly guard?: ConnectionGuard;
}

export interface RunningGrpcServer {
  /** The TCP port bound (0 for a Unix socket). */
  readonly port: number;
  /** What a client dials: `host:port` or `unix:/path`. */
  readonly address: string;
  /** Stops accepting calls, lets in-flight calls finish for at most graceMs, then cuts the rest. */
  close(graceMs: number): Promise<void>;
}

export async function startGrpcServer(options: GrpcServerOptions): Promise<RunningGrpcServer> {
  const protos = loadProtos();
  const server = new grpc.Server({
    // Envoy multiplexes many calls on few connections; keep them alive and let many streams share one.
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 1000,
    // grpc-js leaves session memory unbounded by default; bound it as the lean transport does.
    'grpc-node.max_session_memory': options.maxSessionMemoryMb ?? 32,
    ...options.serverOptions,
    // First, so innermost: a call with a malformed grpc-timeout is answered before any handler runs.
    interceptors: [malformedTimeoutInterceptor(), ...(options.serverOptions?.interceptors ?? [])],
  });
  liftResetBound(server);
  server.addService(protos.rlsServer, options.rls);
  if (options.authz !== undefined) server.addService(AUTHORIZATION_SERVICE, options.authz);
  server.addService(protos.health, options.health.handlers());
  for (const extra of options.extraServices ?? []) server.addService(extra.definition, extra.handlers);
  const socketPath = unixSocketPath(options.host);
  const host = options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host;
  if (socketPath !== undefined) await prepareSocketPath(socketPath);
  const target = socketPath !== undefined ? `unix:${socketPath}` : `${host}:${options.port}`;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(target, options.credentials ?? grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  for (const h2 of http2ServersOf(server)) {
    normalizeTimeouts(h2);
    options.guard?.attach(h2);
  }
  if (socketPath !== undefined) {
    try {
      setSocketMode(socketPath, options.socketMode ?? 0o660);
    } catch (err) {
      server.forceShutdown();
      throw err;
    }
  }
  const port = socketPath !== undefined ? 0 : bound;
  return {
    port,
    address: socketPath !== undefined ? target : `${host}:${port}`,
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
