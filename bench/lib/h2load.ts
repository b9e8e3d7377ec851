/**
 * Drives an RLS server with h2load (nghttp2-client): one serialized ShouldRateLimit request replayed as
 * fast as the server answers (closed loop: clients × streams in flight) or at a fixed rate (--rps), with
 * per-request times from h2load's --log-file for p50/p99/p99.9. Counts gRPC errors from the trailers is not
 * something h2load can do, so every benchmark checks the server's answers separately (checkAnswer).
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface LoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  /** Responses with HTTP status 200 / requests sent. */
  readonly ok: number;
  readonly sent: number;
  readonly command: string;
  /** Server CPU (user + system) per answered request, µs; NaN when the server's pid is unknown. */
  cpuUs?: number;
}

export interface LoadSpec {
  readonly address: string;
  readonly body: Uint8Array;
  /** Closed loop: total requests; fixed rate: requests per client. */
  readonly requests: number;
  readonly clients: number;
  readonly streams: number;
  /** Requests per second per client (fixed rate); absent = as fast as answered. */
  readonly rps?: number;
  readonly dir: string;
  readonly timeoutMs?: number;
}

export function frame(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

export function percentile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export async function h2load(spec: LoadSpec): Promise<LoadResult> {
  const bodyFile = join(spec.dir, `body-${process.pid}.bin`);
  const logFile = join(spec.dir, `h2load-${process.pid}.log`);
  writeFileSync(bodyFile, frame(spec.body));
  const args = ['-n', String(spec.requests * (spec.rps !== undefined ? spec.clients : 1)), '-c', String(spec.clients), '-m', String(spec.streams), '-d', bodyFile,
    '-H', 'content-type: application/grpc', '-H', 'te: trailers', '-H', `grpc-timeout: ${spec.timeoutMs ?? 1000}m`,
    ...(spec.rps !== undefined ? ['--rps', String(spec.rps)] : []), '--log-file', logFile,
    `http://${spec.address}/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`];
  try {
    const { stdout } = await run('h2load', args, { maxBuffer: 1 << 24 });
    const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? NaN);
    const ok = Number(/status codes: (\d+) 2xx/.exec(stdout)?.[1] ?? 0);
    const sent = Number(/requests: (\d+) total/.exec(stdout)?.[1] ?? 0);
    const times = readFileSync(logFile, 'utf8').split('\n').filter((l) => l !== '').map((l) => Number(l.split('\t')[2]) / 1000).sort((a, b) => a - b);
    return { rps, ok, sent, p50: percentile(times, 0.5), p99: percentile(times, 0.99), p999: percentile(times, 0.999), command: `h2load ${args.filter((a) => !a.startsWith(spec.dir)).join(' ')}` };
  } finally {
    rmSync(bodyFile, { force: true });
    rmSync(logFile, { force: true });
  }
}

/** Is h2load on PATH? */
export async function haveH2load(): Promise<boolean> {
  try {
    await run('h2load', ['--version']);
    return true;
  } catch {
    return false;
  }
}
