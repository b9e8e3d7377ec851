/**
 * Drives a server with h2load (nghttp2-client): one request replayed as fast as the server answers (closed
 * loop: clients × streams in flight) or at a fixed rate (--rps), with per-request times from h2load's
 * --log-file for p50/p99/p99.9. A gRPC call (`body`: the message, framed here) goes to `path` with the headers
 * a gRPC client sends; without a body it is a plain GET (through Envoy). h2load sees HTTP statuses only, not
 * gRPC's trailers, so every benchmark checks the server's answers separately.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { grpcFrame } from '../../test/support/raw-h2.js';

const run = promisify(execFile);

export interface LoadResult {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  /** h2load's own mean and max time per request, ms. */
  readonly meanMs: number;
  readonly maxMs: number;
  /** Every request's time, ms, sorted. */
  readonly times: readonly number[];
  /** Responses with HTTP status 200 / requests sent. */
  readonly ok: number;
  readonly sent: number;
  readonly command: string;
  /** Server CPU (user + system) per answered request, µs; NaN when the server's pid is unknown. */
  cpuUs?: number;
}

export interface LoadSpec {
  readonly address: string;
  /** The gRPC message every call sends; absent: GET `path`. */
  readonly body?: Uint8Array;
  /** Default: RateLimitService's ShouldRateLimit with a body, `/` without. */
  readonly path?: string;
  /** Closed loop: total requests; fixed rate: requests per client. */
  readonly requests: number;
  readonly clients: number;
  readonly streams: number;
  /** Requests per second per client (fixed rate); absent = as fast as answered. */
  readonly rps?: number;
  /** Where the body and log files are written (removed afterwards). */
  readonly dir: string;
  /** The grpc-timeout header, ms (gRPC calls; default 1000); null sends none. */
  readonly timeoutMs?: number | null;
  /** Over TLS (h2load does not check the server's certificate). */
  readonly tls?: boolean;
}

const RLS_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';

export function percentile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** h2load's `time for request:  min  max  mean  sd  ±sd` line, as ms. */
function requestTimes(stdout: string): { meanMs: number; maxMs: number } {
  const t = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(stdout);
  const ms = (v: string, u: string) => Number(v) * (u === 'us' ? 0.001 : u === 's' ? 1000 : 1);
  return t ? { meanMs: ms(t[5]!, t[6]!), maxMs: ms(t[3]!, t[4]!) } : { meanMs: Number.NaN, maxMs: Number.NaN };
}

let files = 0;

export async function h2load(spec: LoadSpec): Promise<LoadResult> {
  // runs may overlap (one per server at once): each has files of its own
  const stem = `${process.pid}-${files++}`;
  const bodyFile = join(spec.dir, `body-${stem}.bin`);
  const logFile = join(spec.dir, `h2load-${stem}.log`);
  const grpc = spec.body !== undefined;
  if (grpc) writeFileSync(bodyFile, grpcFrame(spec.body));
  const timeout = spec.timeoutMs === undefined ? 1000 : spec.timeoutMs;
  const args = [
    '-n',
    String(spec.requests * (spec.rps !== undefined ? spec.clients : 1)),
    '-c',
    String(spec.clients),
    '-m',
    String(spec.streams),
    ...(grpc
      ? ['-d', bodyFile, '-H', 'content-type: application/grpc', '-H', 'te: trailers', ...(timeout === null ? [] : ['-H', `grpc-timeout: ${timeout}m`])]
      : []),
    ...(spec.rps !== undefined ? ['--rps', String(spec.rps)] : []),
    '--log-file',
    logFile,
    `${spec.tls === true ? 'https' : 'http'}://${spec.address}${spec.path ?? (grpc ? RLS_PATH : '/')}`,
  ];
  try {
    const { stdout } = await run('h2load', args, { maxBuffer: 1 << 24 });
    const rps = Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(stdout)?.[1] ?? NaN);
    const ok = Number(/status codes: (\d+) 2xx/.exec(stdout)?.[1] ?? 0);
    const sent = Number(/requests: (\d+) total/.exec(stdout)?.[1] ?? 0);
    const times = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => Number(l.split('\t')[2]) / 1000)
      .sort((a, b) => a - b);
    return {
      rps,
      ok,
      sent,
      times,
      ...requestTimes(stdout),
      p50: percentile(times, 0.5),
      p99: percentile(times, 0.99),
      p999: percentile(times, 0.999),
      command: `h2load ${args.filter((a) => !a.startsWith(spec.dir)).join(' ')}`,
    };
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
