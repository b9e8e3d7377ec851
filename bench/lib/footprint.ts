/**
 * A sidecar's footprint, measured on one process from outside: start-up (exec → first decided
 * ShouldRateLimit), CPU at rest (from /proc, over a window with no call in flight), resident memory at rest and
 * after a closed-loop load. bench/footprint.ts runs it for this service and for envoyproxy/ratelimit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import { grpcFrame } from '../../test/support/raw-h2.js';
import { rssBytes, treeCpuSeconds } from './proc-cpu.js';

export interface Started {
  readonly child: ChildProcess;
  readonly pid: number;
  /** The gRPC port it answers on. */
  readonly port: number;
  /** ms from spawn to the first ShouldRateLimit answered OK or OVER_LIMIT. */
  readonly startupMs: number;
  /** CPU ms (user + system, the process tree) spent by then: the start's cost, which a busy machine disturbs least. */
  readonly startupCpuMs: number;
  stop(): Promise<void>;
}

/**
 * One ShouldRateLimit over a fresh HTTP/2 connection: resolves with the answer's overall code (1 OK, 2
 * OVER_LIMIT), or undefined on a refused connection, a gRPC error or no answer within `timeoutMs`.
 */
export function decide(port: number, body: Uint8Array, timeoutMs = 1000): Promise<number | undefined> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (code: number | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session.destroy();
      resolve(code);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const session: ClientHttp2Session = connect(`http://127.0.0.1:${port}`);
    session.on('error', () => finish(undefined));
    const req = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    req.on('error', () => finish(undefined));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('trailers', (t: Record<string, string | string[] | undefined>) => {
      const msg = Buffer.concat(chunks);
      // a 5-byte gRPC frame head, then RateLimitResponse: field 1 (overall_code) is a varint, written first
      if (String(t['grpc-status']) !== '0' || msg.length < 7 || msg[5] !== 0x08) return finish(undefined);
      finish(msg[6]);
    });
    req.on('close', () => finish(undefined));
    req.end(grpcFrame(body));
  });
}

/**
 * Spawns `command` and asks `port` for a decision every `pollMs` until one is made; the start-up time is the
 * time from spawn to that answer (what a pod's first request through Envoy would wait at best).
 */
export async function startAndTime(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  port: number,
  body: Uint8Array,
  opts: { timeoutMs?: number; pollMs?: number; detached?: boolean } = {},
): Promise<Started> {
  const t0 = performance.now();
  const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'], detached: opts.detached ?? false });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => void (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      if (opts.detached === true) process.kill(-child.pid, 'SIGTERM');
      else child.kill('SIGTERM');
    }
    await exited;
  };
  const deadline = t0 + (opts.timeoutMs ?? 20_000);
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${command} exited (${child.exitCode}): ${stderr}`);
    const code = await decide(port, body, 500);
    if (code === 1 || code === 2)
      return { child, pid: child.pid ?? 0, port, startupMs: performance.now() - t0, startupCpuMs: treeCpuSeconds(child.pid) * 1000, stop };
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 2));
  }
  await stop();
  throw new Error(`${command} made no decision on :${port} within ${opts.timeoutMs ?? 20_000} ms: ${stderr}`);
}

/** CPU of `pid`'s process tree over `seconds` with nothing sent to it, in % of one core. */
export async function idleCpuPercent(pid: number, seconds: number): Promise<number> {
  const c0 = treeCpuSeconds(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const c1 = treeCpuSeconds(pid);
  return ((c1 - c0) / ((performance.now() - t0) / 1000)) * 100;
}

export const rssMiB = (pid: number): number => rssBytes(pid) / 2 ** 20;

/** The 1-minute load average (Linux), to print beside every figure taken on a shared machine. */
export async function loadAverage(): Promise<number> {
  const { loadavg } = await import('node:os');
  return loadavg()[0]!;
}
