/**
 * A recording HTTP/2 hop between Envoy and the real service: every gRPC call Envoy makes is decoded (with the
 * service's own request decoder) and kept with its headers and arrival time, then forwarded unchanged to the
 * service, whose answer (headers, messages, trailers) goes back to Envoy unchanged. For tests that assert what
 * Envoy puts on the wire (descriptors, hits_addend, grpc-timeout, calls at stream end).
 */
import { connect, createServer, type ClientHttp2Session, type Http2Server, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { DEFAULT_REQUEST_LIMITS } from '../../src/vocab/request-limits.js';
import type { RateLimitRequest } from '../../src/vocab/types.js';
import { decodeRateLimitRequest } from '../../src/server/rls/decode-request.js';

export interface RecordedCall {
  readonly headers: IncomingHttpHeaders;
  /** The decoded ShouldRateLimit request (undefined for other methods, e.g. health checks). */
  readonly request: RateLimitRequest | undefined;
  /** Date.now() when the whole request had arrived. */
  readonly atMs: number;
  /** Whether the service's answer has gone back to Envoy whole. */
  readonly answered: boolean;
}

export interface RlsRecorder {
  readonly port: number;
  readonly calls: RecordedCall[];
  close(): Promise<void>;
}

const HOP_HEADERS = new Set([':method', ':path', ':scheme', ':authority', 'te', 'content-type', 'grpc-timeout', 'user-agent']);

export async function startRlsRecorder(serviceAddress: string): Promise<RlsRecorder> {
  const calls: RecordedCall[] = [];
  const upstream: ClientHttp2Session = connect(`http://${serviceAddress}`);
  upstream.on('error', () => undefined);
  const server: Http2Server = createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      const isRls = headers[':path'] === '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit';
      const recorded = {
        headers,
        request: isRls ? decodeRateLimitRequest(body.subarray(5), DEFAULT_REQUEST_LIMITS) : undefined,
        atMs: Date.now(),
        answered: false,
      };
      calls.push(recorded);
      const forwarded: Record<string, string> = {};
      for (const [k, v] of Object.entries(headers)) if (HOP_HEADERS.has(k) && typeof v === 'string') forwarded[k] = v;
      const call = upstream.request(forwarded);
      call.on('response', (h: IncomingHttpHeaders) =>
        stream.respond(Object.fromEntries(Object.entries(h).filter(([k]) => k === ':status' || !k.startsWith(':'))), { waitForTrailers: true }),
      );
      let trailers: Record<string, string> = {};
      call.on(
        'trailers',
        (t: IncomingHttpHeaders) => (trailers = Object.fromEntries(Object.entries(t).filter((e): e is [string, string] => typeof e[1] === 'string'))),
      );
      stream.on('wantTrailers', () => stream.sendTrailers(trailers));
      call.on('data', (c: Buffer) => stream.write(c));
      call.on('end', () => {
        stream.end();
        recorded.answered = true;
      });
      call.on('error', () => stream.close());
      call.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    calls,
    close: async () => {
      upstream.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
