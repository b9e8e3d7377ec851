/**
 * `ratelimit serve` as its own process, as a pod runs it: started with env settings on free ports, ready once
 * it logs its start line (which names the addresses it bound), stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
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
}

export function spawnService(env: Record<string, string>, timeoutMs = 20_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, GRPC_HOST: '127.0.0.1', GRPC_PORT: '0', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', CONFIG_WATCH: 'false', LOG_FORMAT: 'json', LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`ratelimit serve did not start within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const m = /"msg":"ratelimit-sidecar started","grpc":"([^"]+)","http":"([^"]+)"/.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve({ child, grpcAddress: m[1]!, httpAddress: m[2]!, stop });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`ratelimit serve exited with ${code}:\n${stderr}`));
    });
  });
}
