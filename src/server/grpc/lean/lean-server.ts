/**
 * The lean gRPC transport: gRPC over node:http2 directly, for the hot unary RPCs,
 * without grpc-js's per-call machinery. It serves a route table (routes.ts) on TCP or a Unix socket,
 * plaintext or TLS (ReloadingServerCredentials, a grpc-js credentials class, certificate reloads included).
 *
 * What a call gets (lean-call.ts): gRPC framing with one message per unary call, `grpc-timeout` deadlines
 * (DEADLINE_EXCEEDED), cancellation by RST_STREAM (the route's signal aborts), trailers with grpc-status and a
 * percent-encoded grpc-message, RESOURCE_EXHAUSTED past the message size limit, compressed messages and
 * grpc-encoding other than identity refused, unknown paths UNIMPLEMENTED, a content-type other than
 * application/grpc answered HTTP 415.
 */
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { ServerCredentials } from '@grpc/grpc-js';
import { metricMethodName } from '../call-timing.js';
import { prepareSocketPath, setSocketMode, unixSocketPath } from '../unix-socket.js';
import { Code, malformedTimeoutMessage, parseGrpcTimeout } from './grpc-wire.js';
import { answerError, LeanCall, type CallHooks } from './lean-call.js';
import type { RouteTable } from './routes.js';
import type { ConnectionGuard } from '../guard/connection-guard.js';
import { NGHTTP2_RESET_BOUND } from '../guard/nghttp2-bounds.js';
import { startLeanBidiCall } from '../bidi/bidi-lean.js';
import { ageConnections, type ConnectionAgeOptions } from './connection-age.js';
import { drainSession } from './drain-session.js';
import { noticeWriter } from './goaway-notice.js';
import { requireClientSan } from '../client-san.js';

export interface LeanServerOptions {
  /** An IP or name, or `unix:/path/to.sock`. */
  readonly host: string;
  readonly port: number;
  readonly routes: RouteTable;
  readonly hooks: CallHooks;
  /** TLS: grpc-js server credentials (e.g. ReloadingServerCredentials); default plaintext. */
  readonly credentials?: ServerCredentials;
  /** Permissions of the Unix socket file (default 0o660). */
  readonly socketMode?: number;
  /** Most concurrent streams per connection (default 1,000, GRPC_MAX_STREAMS_PER_CONNECTION). */
  readonly maxConcurrentStreams?: number;
  /** Most memory one connection may buffer, MiB (default 32, GRPC_MAX_SESSION_MEMORY_MB). */
  readonly maxSessionMemoryMb?: number;
  /** Connection bounds (count, message timeout, idle close, rapid reset); none when absent. */
  readonly guard?: ConnectionGuard;
  /** Mutual TLS: the subject alternative name client certificates must carry (GRPC_TLS_CLIENT_SAN), and where refusals go. */
  readonly clientSan?: { readonly name: string; readonly onRefused: (reason: string) => void };
  /** Connections drained at this age (GRPC_MAX_CONNECTION_AGE, GRPC_MAX_CONNECTION_AGE_GRACE); never when absent. */
  readonly maxConnectionAge?: ConnectionAgeOptions;
}

export interface RunningLeanServer {
  readonly port: number;
  readonly address: string;
  /**
   * Refuses new connections; drains each open one in two steps (drain-session.ts), so that every call its peer
   * sent before it read the first GOAWAY is still answered; lets calls finish for at most graceMs, then cuts the rest.
   * Calling it again returns the same promise.
   */
  close(graceMs: number): Promise<void>;
}

const { HTTP2_HEADER_PATH, HTTP2_HEADER_METHOD, HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_STATUS } = http2.constants;
/** An idle connection's drain: its peer has this long to answer the PING and end what it sent, ms. */
const IDLE_DRAIN_GRACE_MS = 10_000;

function ignore(): void {}

function onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, routes: RouteTable, hooks: CallHooks): void {
  stream.on('error', ignore); // a reset stream: the call sees 'close'
  const rawPath = headers[HTTP2_HEADER_PATH];
  const path = typeof rawPath === 'string' ? rawPath : '';
  const contentType = headers[HTTP2_HEADER_CONTENT_TYPE];
  if (headers[HTTP2_HEADER_METHOD] !== 'POST' || typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
    stream.respond({ [HTTP2_HEADER_STATUS]: headers[HTTP2_HEADER_METHOD] !== 'POST' ? 405 : 415 }, { endStream: true });
    return;
  }
  const unary = routes.unary.get(path);
  const streaming = unary === undefined ? routes.streaming.get(path) : undefined;
  const bidi = routes.bidi.get(path);
  if (unary === undefined && streaming === undefined && bidi === undefined) {
    answerError(stream, Code.UNIMPLEMENTED, `The server does not implement the method ${path}`);
    return;
  }
  const encoding = headers['grpc-encoding'];
  if (encoding !== undefined && encoding !== 'identity') {
    answerError(stream, Code.UNIMPLEMENTED, `grpc-encoding '${String(encoding)}' is not supported; send uncompressed messages`, {
      'grpc-accept-encoding': 'identity',
    });
    return;
  }
  const timeout = parseGrpcTimeout(headers['grpc-timeout']);
  if (timeout !== undefined && Number.isNaN(timeout)) {
    answerError(stream, Code.INTERNAL, malformedTimeoutMessage(headers['grpc-timeout']));
    return;
  }
  if (bidi !== undefined) {
    startLeanBidiCall(stream, bidi, hooks.maxMessageBytes);
    return;
  }
  const method = metricMethodName(path);
  new LeanCall(stream, method, unary ?? streaming!, unary === undefined, timeout === undefined ? undefined : Date.now() + timeout, hooks, headers);
}

export async function startLeanServer(options: LeanServerOptions): Promise<RunningLeanServer> {
  const settings: http2.Settings = { maxConcurrentStreams: options.maxConcurrentStreams ?? 1000 };
  // Node refuses new streams once a session buffers more than maxSessionMemory: sized for small RLS calls,
  // so that a peer cannot make one connection hold much more than its streams' messages.
  const base = { settings, maxSessionMemory: options.maxSessionMemoryMb ?? 32, ...NGHTTP2_RESET_BOUND };
  const creds = options.credentials;
  const secure = creds?._isSecure() === true;
  const server = secure
    ? http2.createSecureServer({ ...base, ...creds._getConstructorOptions(), ...creds._getSecureContextOptions(), ALPNProtocols: ['h2'] })
    : http2.createServer(base);
  const onContext = (ctx: unknown) => {
    if (ctx !== null) (server as http2.Http2SecureServer).setSecureContext(ctx as Parameters<http2.Http2SecureServer['setSecureContext']>[0]);
  };
  if (secure) creds._addWatcher(onContext);
  if (options.clientSan !== undefined) {
    if (!secure) throw new Error('GRPC_TLS_CLIENT_SAN needs gRPC TLS with client certificates (GRPC_TLS_CLIENT_CA)');
    requireClientSan(server, options.clientSan.name, options.clientSan.onRefused);
  }
  // The notice of a two-step drain, at shutdown, at a connection's age and when it idles. Over TLS it takes a
  // passage that costs CPU on every call (goaway-notice.ts): set up only where connections age; elsewhere over
  // TLS a drain is one step.
  const age = options.maxConnectionAge !== undefined && options.maxConnectionAge.ageMs > 0 ? options.maxConnectionAge : undefined;
  const notice = !secure || age !== undefined ? noticeWriter(server) : undefined;
  options.guard?.attach(server, (session) => drainSession(session, notice, IDLE_DRAIN_GRACE_MS));
  if (age !== undefined && notice !== undefined) ageConnections(server, age, notice);
  let closed: Promise<void> | undefined;
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined); // the session closes; its calls see their streams close
    if (closed !== undefined) session.close(); // came in as the server closed: refused
  });
  // Answers are small and latency matters: no Nagle delay on the connection.
  server.on(secure ? 'secureConnection' : 'connection', (socket: { setNoDelay(on: boolean): void }) => socket.setNoDelay(true));
  // Every stream node:http2 hands over is one its session accepted, before any GOAWAY of its own: it is answered.
  server.on('stream', (stream, headers) => onStream(stream, headers, options.routes, options.hooks));
  // A TLS handshake that fails, or a client speaking HTTP/1: drop that connection, keep serving.
  server.on('tlsClientError', () => undefined);

  const socketPath = unixSocketPath(options.host);
  if (socketPath !== undefined) await prepareSocketPath(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if (socketPath !== undefined) server.listen(socketPath, ready);
    else server.listen(options.port, options.host.replace(/^\[(.*)\]$/, '$1'), ready);
  });
  server.on('error', () => undefined);
  if (socketPath !== undefined) {
    try {
      setSocketMode(socketPath, options.socketMode ?? 0o660);
    } catch (err) {
      server.close();
      throw err;
    }
  }
  const addr = server.address();
  const port = socketPath !== undefined || addr === null || typeof addr === 'string' ? 0 : addr.port;
  const host = options.host.includes(':') && !options.host.startsWith('[') && socketPath === undefined ? `[${options.host}]` : options.host;
  return {
    port,
    address: socketPath !== undefined ? `unix:${socketPath}` : `${host}:${port}`,
    close: (graceMs) =>
      (closed ??= new Promise<void>((resolve) => {
        if (secure) creds._removeWatcher(onContext);
        const timer = setTimeout(() => {
          for (const s of sessions) s.destroy();
        }, graceMs);
        timer.unref();
        for (const s of sessions) drainSession(s, notice, graceMs);
        // Stops listening, done once every connection has closed. Not Http2Server.close(): it also closes every
        // session at once, a one-step GOAWAY.
        net.Server.prototype.close.call(server, () => {
          clearTimeout(timer);
          resolve();
        });
      })),
  };
}
