/**
 * Bounds on what a client can make the gRPC port hold, on the node:http2 servers of either transport (the
 * lean server's own, and grpc-js's, see grpc-js-http2.ts), so that calls that never finish cannot pile up:
 *
 * - connections: at most `maxConnections` HTTP/2 sessions; one more gets GOAWAY (ENHANCE_YOUR_CALM, "too many
 *   connections") at once. (Streams per connection and session memory are HTTP/2 settings, set where each
 *   server is made: a stream past the cap is refused with RST_STREAM REFUSED_STREAM by nghttp2.)
 * - message timeout: a stream whose request has not fully arrived `messageTimeoutMs` after its headers is
 *   reset (RST_STREAM CANCEL); its call ends as cancelled. Envoy sends a request whole at once.
 * - idle connections: a connection with no open stream for `idleTimeoutMs` is closed gracefully (GOAWAY
 *   NO_ERROR; the peer reconnects when it next needs to). Envoy keeps its connection and reopens it at will,
 *   so the default is minutes, long past the gaps of a live proxy.
 * - rapid reset (CVE-2023-44487): every stream the peer resets (RST_STREAM other than NO_ERROR) spends a
 *   token of its address's bucket (peer-buckets.ts); a peer that runs dry has its connection ended (GOAWAY
 *   ENHANCE_YOUR_CALM) and new connections from its address closed at once until the bucket has refilled
 *   to half. Unix-socket clients share one bucket.
 *
 * One guard serves all the listeners of a transport, so the bounds are per process.
 */
import type * as net from 'node:net';
import * as http2 from 'node:http2';
import { PeerBuckets } from './peer-buckets.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

export const GUARD_ACTIONS = ['connection_refused', 'peer_refused', 'message_timeout', 'idle_close', 'reset_goaway'] as const;
export type GuardAction = (typeof GUARD_ACTIONS)[number];

export interface GuardOptions {
  readonly maxConnections: number;
  readonly messageTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** Resets a peer may send at once, and per second after that. */
  readonly resetBurst: number;
  readonly resetRatePerS: number;
  /** Monotonic ms for the reset buckets (default performance.now). */
  readonly nowMs?: () => number;
  readonly onAction?: (action: GuardAction) => void;
  /** Paths of bidirectional-streaming methods, whose request never ends: no message timeout for them. */
  readonly longLivedPaths?: ReadonlySet<string>;
}

type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;

const kMessageTimer = Symbol('messageTimer');
type WatchedStream = http2.ServerHttp2Stream & { [kMessageTimer]?: NodeJS.Timeout };

function messageTimedOut(stream: http2.ServerHttp2Stream, guard: ConnectionGuard): void {
  guard.timedOut(stream);
}

/** 'end' or 'close' of a watched stream (clearing twice is harmless). */
function clearMessageTimer(this: WatchedStream): void {
  clearTimeout(this[kMessageTimer]);
}

export class ConnectionGuard {
  private sessions = 0;
  private readonly resets: PeerBuckets;
  /** Streams this guard reset itself: not the peer's resets. */
  private readonly ours = new WeakSet<http2.ServerHttp2Stream>();

  constructor(private readonly options: GuardOptions) {
    this.resets = new PeerBuckets({ burst: options.resetBurst, ratePerS: options.resetRatePerS, nowMs: options.nowMs ?? (() => performance.now()) });
  }

  /** Open HTTP/2 connections (sessions) now. */
  get connections(): number {
    return this.sessions;
  }

  attach(server: AnyHttp2Server): void {
    // Before node:http2's own listener, which makes the session: a refused peer costs no TLS or HTTP/2 work.
    server.prependListener('connection', (socket: net.Socket) => {
      if (this.resets.refused(peerOf(socket))) {
        this.options.onAction?.('peer_refused');
        socket.destroy();
      }
    });
    server.on('session', (session: http2.ServerHttp2Session) => this.onSession(session));
  }

  private onSession(session: http2.ServerHttp2Session): void {
    const socket = session.socket as net.Socket | undefined;
    const peer = socket === undefined ? 'unknown' : peerOf(socket);
    if (this.sessions >= this.options.maxConnections) {
      this.options.onAction?.('connection_refused');
      refuse(session);
      return;
    }
    this.sessions++;
    let active = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      idle = setTimeout(() => {
        this.options.onAction?.('idle_close');
        session.close(); // GOAWAY NO_ERROR: in-flight streams (none) finish, the peer reconnects when it needs to
      }, this.options.idleTimeoutMs);
      idle.unref();
    };
    arm();
    session.once('close', () => {
      this.sessions--;
      clearTimeout(idle);
    });
    session.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
      active++;
      clearTimeout(idle);
      if (this.options.longLivedPaths?.has(String(headers[':path'])) !== true) this.watchMessage(stream);
      stream.once('close', () => {
        if (--active === 0 && !session.closed && !session.destroyed) arm();
        this.countReset(stream, session, peer);
      });
    });
  }

  /**
   * Resets the stream if its request has not fully arrived in time. The listeners are shared functions that
   * find the timer on the stream (no closures or `once` wrappers per call: allocation per request, issue #20).
   */
  private watchMessage(stream: http2.ServerHttp2Stream): void {
    if (stream.readableEnded) return;
    const timer = setTimeout(messageTimedOut, this.options.messageTimeoutMs, stream, this);
    timer.unref();
    (stream as WatchedStream)[kMessageTimer] = timer;
    stream.on('end', clearMessageTimer);
    stream.on('close', clearMessageTimer);
  }

  /** The stream's message did not arrive within GRPC_MESSAGE_TIMEOUT_MS. */
  timedOut(stream: http2.ServerHttp2Stream): void {
    if (stream.readableEnded || stream.destroyed) return;
    this.ours.add(stream);
    this.options.onAction?.('message_timeout');
    stream.close(NGHTTP2_CANCEL);
  }

  private countReset(stream: http2.ServerHttp2Stream, session: http2.ServerHttp2Session, peer: string): void {
    const code = stream.rstCode;
    if (code === undefined || code === NGHTTP2_NO_ERROR || this.ours.has(stream) || session.destroyed) return;
    if (this.resets.take(peer)) return;
    this.options.onAction?.('reset_goaway');
    refuse(session);
  }
}

/**
 * GOAWAY ENHANCE_YOUR_CALM, then close: streams already open may finish (nghttp2 refuses new ones), and the
 * connection is cut after a second whatever the peer does. (session.destroy with a code sends NO_ERROR.)
 */
function refuse(session: http2.ServerHttp2Session): void {
  session.on('error', () => undefined);
  if (session.closed || session.destroyed) return;
  session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
  session.close();
  setTimeout(() => session.destroyed || session.destroy(), 1000).unref();
}

function peerOf(socket: net.Socket): string {
  return socket.remoteAddress ?? 'unix';
}
