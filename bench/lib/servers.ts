/** The processes a benchmark measures: our service, the no-op grpc-js baseline, a Redis of their own. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { spawnService, type ServiceProcess } from '../../test/support/service-process.js';
import { IMAGE_CLI, START_ENV, START_NODE_OPTIONS, ensureBuilt } from './image.js';

export interface Target {
  readonly name: string;
  readonly address: string;
  /** The admin HTTP address (our service only): metrics. */
  readonly httpAddress?: string;
  /** The server's process id, when known: its CPU time is read from /proc. */
  readonly pid?: number;
  stop(): Promise<void>;
}

/** What a benchmark changes in how the image runs the service. */
export interface ImageRun {
  /** Flags on node's command line (those NODE_OPTIONS refuses: --cpu-prof, --trace-gc-nvp, -r). */
  readonly flags?: readonly string[];
  /** Another build's cli.js (default: the image's, built first when src/ is newer). */
  readonly cli?: string;
  /** A file descriptor for the process's stdout (where V8 writes its traces). */
  readonly stdout?: number;
}

export async function startOurs(name: string, env: Record<string, string>, how: ImageRun = {}): Promise<Target & { process: ServiceProcess }> {
  // As the image runs it (dist/cli.js, its NODE_OPTIONS unless `env` gives others, MALLOC_ARENA_MAX), with the
  // defaults (spawnService: no reload watcher, logs at info: the start line is read).
  const cli = how.cli ?? IMAGE_CLI;
  if (cli === IMAGE_CLI) ensureBuilt();
  const p = await spawnService({ NODE_OPTIONS: START_NODE_OPTIONS, ...START_ENV, ...env }, 20_000, [...(how.flags ?? []), cli, 'serve'], how.stdout);
  return {
    name,
    address: p.grpcAddress,
    httpAddress: p.httpAddress,
    ...(p.child.pid === undefined ? {} : { pid: p.child.pid }),
    process: p,
    stop: () => p.stop(),
  };
}

/** The service as the image runs it, for a benchmark that drives the process itself (addresses, stop, stderr). */
export async function startImage(env: Record<string, string>, how: ImageRun = {}): Promise<ServiceProcess> {
  return (await startOurs('service', env, how)).process;
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
          ...(child.pid === undefined ? {} : { pid: child.pid }),
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
export function external(address: string, pid?: number): Target {
  return { name: `against ${address}`, address, ...(pid === undefined ? {} : { pid }), stop: () => Promise.resolve() };
}

/**
 * CPU seconds (user + system) a process and its waited-for children have used, from /proc (Linux); NaN
 * elsewhere. Per request, it is the figure a noisy shared machine disturbs least: throughput on one core
 * is about 1 / (CPU per request).
 */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime are fields 14 and 15 of the full line (12 and 13 after the name)
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

const CLOCK_TICKS = 100;

/** Sums a Prometheus counter's samples from our service's /metrics. */
export async function counter(t: Target, name: string): Promise<number> {
  if (t.httpAddress === undefined) return Number.NaN;
  const text = await (await fetch(`http://${t.httpAddress}/metrics`)).text();
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
}
