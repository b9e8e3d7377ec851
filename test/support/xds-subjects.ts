/**
 * The two rate-limit services that take their rules over xDS, started alike for the same scenario: this service
 * (`ratelimit serve` as its own process) and envoyproxy/ratelimit (shared/tools/envoy-ratelimit, on a Redis of
 * its own). Both listen on 127.0.0.1 and free ports.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REFERENCE_DIR } from '../../bench/lib/reference.js';
import { freePort, startRedis } from './redis.js';
import { spawnService } from './service-process.js';

export const REFERENCE_BIN = join(REFERENCE_DIR, 'ratelimit');

export interface XdsSubject {
  /** host:port of the gRPC server. */
  readonly grpcAddress: string;
  /** http://host:port of the HTTP server (/healthcheck). */
  readonly httpBase: string;
  readonly log: () => string;
  stop(): Promise<void>;
}

export async function startOursOverXds(env: Record<string, string>): Promise<XdsSubject> {
  const svc = await spawnService(env);
  return { grpcAddress: svc.grpcAddress, httpBase: `http://${svc.httpAddress}`, log: () => svc.stderr(), stop: () => svc.stop() };
}

/** The reference's environment for a test: Redis at 127.0.0.1:`redisPort`, its three ports, no statsd, no tracing. */
export function referenceEnv(redisPort: number, grpc: number, http: number, debug: number): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin',
    USE_STATSD: 'false',
    USE_PROMETHEUS: 'false',
    TRACING_ENABLED: 'false',
    BACKEND_TYPE: 'redis',
    REDIS_SOCKET_TYPE: 'tcp',
    REDIS_TYPE: 'single',
    REDIS_URL: `127.0.0.1:${redisPort}`,
    HOST: '127.0.0.1',
    PORT: String(http),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpc),
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: String(debug),
    LOG_LEVEL: 'info',
  };
}

export async function startReferenceOverXds(env: Record<string, string>): Promise<XdsSubject> {
  const redis = await startRedis();
  const [grpc, http, debug] = [await freePort(), await freePort(), await freePort()];
  let out = '';
  const child = spawn(REFERENCE_BIN, [], {
    env: {
      ...referenceEnv(redis.port, grpc, http, debug),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr.on('data', (c: Buffer) => void (out = (out + c.toString()).slice(-200_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    grpcAddress: `127.0.0.1:${grpc}`,
    httpBase: `http://127.0.0.1:${http}`,
    log: () => out,
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
      await redis.stop();
    },
  };
}
