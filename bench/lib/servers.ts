/** The processes a benchmark measures: our service, the no-op grpc-js baseline, a Redis of their own. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { spawnService, type ServiceProcess } from '../../test/support/service-process.js';

export interface Target {
  readonly name: string;
  readonly address: string;
  /** The admin HTTP address (our service only): metrics. */
  readonly httpAddress?: string;
  stop(): Promise<void>;
}

export async function startOurs(name: string, env: Record<string, string>): Promise<Target & { process: ServiceProcess }> {
  // As deployed, with the defaults (spawnService: no reload watcher, logs at info: the start line is read).
  const p = await spawnService(env);
  return { name, address: p.grpcAddress, httpAddress: p.httpAddress, process: p, stop: () => p.stop() };
}

export function startNoop(): Promise<Target> {
  const script = fileURLToPath(new URL('./noop-server.ts', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        resolve({
          name: 'no-op grpc-js',
          address: `127.0.0.1:${m[1]}`,
          stop: async () => {
            if (child.exitCode === null) child.kill('SIGKILL');
            await exited;
          },
        });
      }
    });
    child.once('exit', (code) => reject(new Error(`no-op server exited with ${code}`)));
  });
}

/** A server given by address (--against): not started or stopped here. */
export function external(address: string): Target {
  return { name: `against ${address}`, address, stop: () => Promise.resolve() };
}

/** Sums a Prometheus counter's samples from our service's /metrics. */
export async function counter(t: Target, name: string): Promise<number> {
  if (t.httpAddress === undefined) return Number.NaN;
  const text = await (await fetch(`http://${t.httpAddress}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
}
