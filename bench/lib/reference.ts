/**
 * envoyproxy/ratelimit (the reference, ../shared/tools/envoy-ratelimit) started for a benchmark on a Redis of
 * its own, and the pid of a redis-server (from INFO server) so that its CPU can be read from /proc.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, rawCommand } from '../../test/support/redis.js';
import type { Target } from './servers.js';

/**
 * Where the reference's start script is: REFERENCE_START (the script) or ENVOY_RATELIMIT_DIR (its folder) when
 * set, else relative to this repository (a sibling of the checkout's parent).
 */
export const REFERENCE_START =
  process.env['REFERENCE_START'] ||
  (process.env['ENVOY_RATELIMIT_DIR']
    ? join(process.env['ENVOY_RATELIMIT_DIR'], 'start.sh')
    : fileURLToPath(new URL('../../../shared/tools/envoy-ratelimit/start.sh', import.meta.url)));

export function haveReference(path = REFERENCE_START): boolean {
  return existsSync(path);
}

/** The reference's folder: its binary (`ratelimit`) beside its start script. */
export const REFERENCE_DIR = dirname(REFERENCE_START);

/** Why the reference cannot run here (its binary or start script not executable, or not linux x86-64), else undefined. */
export function referenceCannotRun(dir = REFERENCE_DIR): string | undefined {
  try {
    accessSync(join(dir, 'ratelimit'), constants.X_OK);
    accessSync(join(dir, 'start.sh'), constants.X_OK);
  } catch (err) {
    return `the reference binary cannot run here (${(err as Error).message})`;
  }
  return process.platform === 'linux' && process.arch === 'x64' ? undefined : 'the reference binary is built for linux x86-64 only';
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

export interface ReferenceOptions {
  /** The gRPC port (default: a free one), e.g. to start it again where it was. */
  grpcPort?: number;
  /** Further VAR=value settings for the server (start.sh passes them last, so they win), e.g. REDIS_TYPE=sentinel. */
  env?: readonly string[];
}

/** Starts the reference with the rules in `rulesDir` on `redisAddress` (host:port); resolves once its gRPC port accepts. */
export async function startReference(rulesDir: string, redisAddress: string, start = REFERENCE_START, options: ReferenceOptions = {}): Promise<Target> {
  const [grpc, http, debug] = [options.grpcPort ?? (await freePort()), await freePort(), await freePort()];
  const child = spawn(start, [String(grpc), String(http), String(debug), rulesDir, redisAddress, ...(options.env ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    // the script's own process group (detached): the shell and the server it runs
    if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await exited;
  };
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`envoyproxy/ratelimit exited (${child.exitCode}): ${stderr}`);
    if (await accepts(grpc))
      return { name: 'envoyproxy/ratelimit', address: `127.0.0.1:${grpc}`, ...(child.pid === undefined ? {} : { pid: child.pid }), stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`envoyproxy/ratelimit did not listen on ${grpc} within 10 s: ${stderr}`);
}

/** The process id of the redis-server on `port` (INFO server). */
export async function redisPid(port: number): Promise<number> {
  const info = await rawCommand(port, ['INFO', 'server']);
  const m = /process_id:(\d+)/.exec(info);
  if (!m) throw new Error(`no process_id in INFO server of :${port}`);
  return Number(m[1]);
}
