/**
 * `ratelimit serve` as its own process, as a pod runs it: started with env settings on free ports, ready once
 * it logs its start line (which names the addresses it bound), stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** host:port of the gRPC server. */
  readonly grpcAddress: string;
  /** host:port of the HTTP admin server. */
  readonly httpAddress: string;
  /** SIGTERM, and resolves once the process has exited. */
  stop(): Promise<void>;
  /** Everything it logged so far. */
  stderr(): string;
}

/** The JSON start line (fields in any order), once it has been written whole. */
function startLine(stderr: string): { grpc: string; http: string } | undefined {
  for (const line of stderr.split('\n').slice(0, -1)) {
    if (!line.includes('ratelimit-sidecar started')) continue;
    try {
      const o = JSON.parse(line) as { msg?: string; grpc?: string; http?: string };
      if (o.msg === 'ratelimit-sidecar started' && o.grpc && o.http) return { grpc: o.grpc, http: o.http };
    } catch {
      // not JSON: keep reading
    }
  }
  return undefined;
}

/**
 * `args`: what node runs (default: bin/ratelimit.mjs serve; benchmarks pass the image's dist/cli.js serve).
 * `stdout`: a file descriptor for what the process writes there (a V8 trace), else it is dropped.
 */
export function spawnService(
  env: Record<string, string>,
  timeoutMs = 20_000,
  args: readonly string[] = [BIN, 'serve'],
  stdout?: number,
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      CONFIG_WATCH: 'false',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_MS: '0',
      ...env,
    },
    stdio: ['ignore', stdout ?? 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`ratelimit serve did not start within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.stderr!.on('data', () => {
      const started = startLine(stderr);
      if (started) {
        clearTimeout(timer);
        resolve({ child, grpcAddress: started.grpc, httpAddress: started.http, stop, stderr: () => stderr });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ratelimit serve exited with ${code}:\n${stderr}`));
    });
  });
}

/** Whether host:port accepts a TCP connection now (closed at once: no call is made, so nothing is counted). */
export function portAccepts(address: string): Promise<boolean> {
  const colon = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect(Number(address.slice(colon + 1)), address.slice(0, colon), () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
