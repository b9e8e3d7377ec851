/**
 * Helpers for the Rate Limit Quota Service tests: the Envoy config and rules published in docs/rlqs.md (read
 * from the page, so that the tests run what a reader pastes), and paced HTTP traffic that counts answers.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { parse } from 'yaml';
import { applyOverrides } from './envoy-config.js';
import { grpcFrame } from './raw-h2.js';

const ROOT = join(import.meta.dirname, '../..');

/** The fenced block that follows `<!-- marker` in docs/rlqs.md. */
export function rlqsDocBlock(marker: 'rlqs-envoy-config' | 'rlqs-rules'): string {
  const page = readFileSync(join(ROOT, 'docs/rlqs.md'), 'utf8');
  const at = page.indexOf(`<!-- ${marker}`);
  if (at < 0) throw new Error(`docs/rlqs.md has no <!-- ${marker} --> block`);
  const m = /```yaml\n([\s\S]*?)```/.exec(page.slice(at));
  if (!m) throw new Error(`docs/rlqs.md: no yaml block after <!-- ${marker} -->`);
  return m[1]!;
}

/** docs/rlqs.md's Envoy config as pasted, with its `ratelimit` cluster at `grpcAddress` (host:port) and `app` at the upstream. */
export function rlqsEnvoyConfig(grpcAddress: string, upstreamPort: number): Record<string, unknown> {
  const [host, port] = grpcAddress.split(':') as [string, string];
  return applyOverrides(parse(rlqsDocBlock('rlqs-envoy-config')) as Record<string, unknown>, {
    clusters: { ratelimit: { address: host, port: Number(port) }, app: { address: '127.0.0.1', port: upstreamPort } },
  });
}

export interface PacedResult {
  /** Answers by status, and the admitted (200) ones per whole second since the start. */
  readonly byStatus: Map<number, number>;
  readonly admittedPerSecond: number[];
  readonly sent: number;
  /** Each answered request's time from send to its whole answer, ms, in the order answered. */
  readonly latenciesMs: number[];
}

/**
 * Sends `ratePerS` requests per second to `url` for `durationMs`, on a fixed schedule (not waiting for the
 * answers; at most 64 in flight, later ones are skipped and counted as status 0), and counts the answers.
 * `stop` ends it early (`sent` then counts what was sent).
 */
export async function pacedTraffic(
  url: string,
  ratePerS: number,
  durationMs: number,
  headers: Record<string, string> = {},
  stop?: AbortSignal,
): Promise<PacedResult> {
  const byStatus = new Map<number, number>();
  const admittedPerSecond: number[] = [];
  const latenciesMs: number[] = [];
  const start = performance.now();
  const total = Math.round((ratePerS * durationMs) / 1000);
  let inFlight = 0;
  const pending: Promise<void>[] = [];
  const count = (status: number): void => {
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  };
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / ratePerS;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (stop?.aborted === true) break;
    if (inFlight >= 64) {
      count(0);
      continue;
    }
    inFlight++;
    const sentAt = performance.now();
    const second = Math.floor((sentAt - start) / 1000);
    pending.push(
      fetch(url, { headers })
        .then(async (res) => {
          await res.arrayBuffer();
          latenciesMs.push(performance.now() - sentAt);
          count(res.status);
          if (res.status === 200) admittedPerSecond[second] = (admittedPerSecond[second] ?? 0) + 1;
        })
        .catch(() => count(-1))
        .finally(() => inFlight--),
    );
  }
  await Promise.all(pending);
  return { byStatus, admittedPerSecond: Array.from(admittedPerSecond, (n) => n ?? 0), sent: pending.length + (byStatus.get(0) ?? 0), latenciesMs };
}

// ---- a quota-stream client: node:http2 with Envoy's own protos (from @grpc/grpc-js-xds) encoding and decoding ----

const require = createRequire(import.meta.url);
const XDS_DEPS = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const INCLUDE = [
  dirname(require.resolve('protobufjs/package.json')),
  ...['envoy-api', 'xds', 'protoc-gen-validate', 'googleapis'].map((d) => join(XDS_DEPS, d)),
];

let rlqsTypes: { reports: protobuf.Type; response: protobuf.Type } | undefined;
function types(): { reports: protobuf.Type; response: protobuf.Type } {
  if (rlqsTypes) return rlqsTypes;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => INCLUDE.map((d) => join(d, target)).find((p) => existsSync(p)) ?? target;
  root.loadSync('envoy/service/rate_limit_quota/v3/rlqs.proto', { keepCase: true });
  root.resolveAll();
  rlqsTypes = {
    reports: root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaUsageReports'),
    response: root.lookupType('envoy.service.rate_limit_quota.v3.RateLimitQuotaResponse'),
  };
  return rlqsTypes;
}

export interface Usage {
  bucket: Record<string, string>;
  allowed?: number;
  denied?: number;
  elapsedS?: number;
}

/** A RateLimitQuotaUsageReports message, encoded with Envoy's proto. */
export function encodeReports(domain: string, usages: readonly Usage[]): Buffer {
  const t = types().reports;
  const msg = t.fromObject({
    domain,
    bucket_quota_usages: usages.map((u) => ({
      bucket_id: { bucket: u.bucket },
      time_elapsed: { seconds: u.elapsedS ?? 0 },
      num_requests_allowed: u.allowed ?? 0,
      num_requests_denied: u.denied ?? 0,
    })),
  });
  return Buffer.from(t.encode(msg).finish());
}

/** A decoded RateLimitQuotaResponse's actions, as plain objects (longs as numbers, enums as names). */
export interface Action {
  bucket_id: { bucket: Record<string, string> };
  quota_assignment_action?: {
    assignment_time_to_live?: { seconds?: number; nanos?: number };
    rate_limit_strategy?: {
      blanket_rule?: string;
      token_bucket?: { max_tokens: number; tokens_per_fill?: { value: number }; fill_interval?: { seconds?: number } };
    };
  };
  abandon_action?: object;
}

export function decodeResponse(bytes: Uint8Array): Action[] {
  const t = types().response;
  const o = t.toObject(t.decode(bytes), { longs: Number, enums: String, defaults: false, oneofs: false }) as { bucket_action?: Action[] };
  return o.bucket_action ?? [];
}

/** One StreamRateLimitQuotas call on its own (or a shared) HTTP/2 connection. */
export class QuotaStream {
  readonly responses: Action[][] = [];
  status: { code: number; message: string } | undefined;
  private waiters: (() => void)[] = [];
  private readonly stream: http2.ClientHttp2Stream;
  private buf = Buffer.alloc(0);
  readonly session: http2.ClientHttp2Session;

  constructor(address: string | http2.ClientHttp2Session) {
    this.session = typeof address === 'string' ? http2.connect(`http://${address}`) : address;
    this.session.on('error', () => undefined);
    this.stream = this.session.request({
      ':method': 'POST',
      ':path': '/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    this.stream.on('error', () => undefined);
    const onStatus = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) {
        this.status = { code: Number(h['grpc-status']), message: decodeURIComponent(String(h['grpc-message'] ?? '')) };
        this.stream.close(); // the call is over, as a gRPC client ends it on the status
      }
      this.wake();
    };
    this.stream.on('response', onStatus);
    this.stream.on('trailers', onStatus);
    this.stream.on('close', () => {
      this.status ??= { code: -2, message: 'closed' };
      this.wake();
    });
    this.stream.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      while (this.buf.length >= 5 && this.buf.length >= 5 + this.buf.readUInt32BE(1)) {
        const len = this.buf.readUInt32BE(1);
        this.responses.push(decodeResponse(this.buf.subarray(5, 5 + len)));
        this.buf = this.buf.subarray(5 + len);
      }
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  send(domain: string, usages: readonly Usage[]): void {
    this.stream.write(grpcFrame(encodeReports(domain, usages)));
  }

  sendRaw(bytes: Buffer): void {
    this.stream.write(bytes);
  }

  /** Stops reading answers (HTTP/2 flow control then holds them at the server) or reads again. */
  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    this.stream.resume();
  }

  halfClose(): void {
    this.stream.end();
  }

  /** Waits (at most 5 s) until `n` responses have arrived in all, or the call ended; returns the n-th. */
  async response(n: number): Promise<Action[]> {
    const until = Date.now() + 5000;
    while (this.responses.length < n && this.status === undefined && Date.now() < until) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, until - Date.now());
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    const r = this.responses[n - 1];
    if (r === undefined) throw new Error(`no response #${n} (got ${this.responses.length}, status ${JSON.stringify(this.status)})`);
    return r;
  }

  /** Waits (at most 5 s) for the call's status. */
  async ended(): Promise<{ code: number; message: string }> {
    const until = Date.now() + 5000;
    while (this.status === undefined && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    if (this.status === undefined) throw new Error('the call did not end');
    return this.status;
  }

  close(): void {
    this.stream.close();
    this.session.close();
  }
}
