/**
 * What the grpc-js transport needs below grpc-js, so that it answers as the lean transport does:
 *
 * - the node:http2 servers a grpc-js Server made (a private field of grpc-js, checked here: a grpc-js that
 *   no longer has it fails the start, and the transport tests, instead of running unguarded);
 * - `grpc-timeout` read per the gRPC spec before grpc-js reads it. grpc-js matches it with an unanchored
 *   pattern (`-1S` is 1 s, `1.5S` is 5 s, `100000000S` is 0 s) and keeps the result in an int32 (2^31 ms
 *   or more expires at once). Here a well-formed value above MAX_GRPC_TIMEOUT_MS is rewritten to that
 *   bound, and a malformed one is removed and marked, so that the interceptor below answers INTERNAL with
 *   the lean transport's message.
 */
import type * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { NGHTTP2_RESET_BOUND } from './guard/nghttp2-bounds.js';
import { malformedTimeoutMessage, MAX_GRPC_TIMEOUT_MS, parseGrpcTimeout } from './lean/grpc-wire.js';

/** Carries a malformed grpc-timeout from the stream's headers to the interceptor (a client's own is dropped). */
const MALFORMED_TIMEOUT = 'x-ratelimit-malformed-grpc-timeout';
const CLAMPED_TIMEOUT = `${MAX_GRPC_TIMEOUT_MS / 1000}S`;

/** The http2 servers behind a bound grpc-js Server. */
export function http2ServersOf(server: grpc.Server): http2.Http2Server[] {
  const map = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(map instanceof Map)) throw new Error('this @grpc/grpc-js has no Server.http2Servers: the grpc-js transport cannot guard its connections');
  return [...(map as Map<http2.Http2Server, unknown>).keys()];
}

/**
 * The options grpc-js makes its node:http2 servers with (a private field, checked like http2Servers), given
 * nghttp2's reset bound out of the way before they are made (nghttp2-bounds.ts).
 */
export function liftResetBound(server: grpc.Server): void {
  const options = (server as unknown as { commonServerOptions?: unknown }).commonServerOptions;
  if (typeof options !== 'object' || options === null) throw new Error('this @grpc/grpc-js has no Server.commonServerOptions: the grpc-js transport cannot lift nghttp2\'s reset bound');
  Object.assign(options, NGHTTP2_RESET_BOUND);
}

/** Rewrites `grpc-timeout` on every stream before grpc-js sees it (see above). */
export function normalizeTimeouts(server: http2.Http2Server): void {
  server.prependListener('stream', (_stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    delete headers[MALFORMED_TIMEOUT];
    const raw = headers['grpc-timeout'];
    const ms = parseGrpcTimeout(raw);
    if (ms === undefined) return;
    if (Number.isNaN(ms)) {
      delete headers['grpc-timeout'];
      headers[MALFORMED_TIMEOUT] = encodeURIComponent(String(raw));
    } else if (ms >= MAX_GRPC_TIMEOUT_MS) headers['grpc-timeout'] = CLAMPED_TIMEOUT;
  });
}

/** Answers INTERNAL to a call whose grpc-timeout was malformed, before its handler runs. */
export function malformedTimeoutInterceptor(): grpc.ServerInterceptor {
  return (_method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, mdNext) {
            const bad = metadata.get(MALFORMED_TIMEOUT)[0];
            if (bad === undefined) {
              mdNext(metadata);
              return;
            }
            call.sendStatus({ code: grpc.status.INTERNAL, details: malformedTimeoutMessage(decodeURIComponent(String(bad))) });
          },
        });
      },
    });
}
