/**
 * Bounds on what a client can make the gRPC port hold, on its node:http2 server (lean/lean-server.ts), so that
 * calls that never finish cannot pile up:
 *
 * - connections: at most `maxConnections` HTTP/2 sessions; one more gets GOAWAY (ENHANCE_YOUR_CALM, "too many
 *   connections") at once. (Streams per connection and session memory are HTTP/2 settings, set where each
 *   server is made: a stream past the cap is refused with RST_STREAM REFUSED_STREAM by nghttp2.)
 * - message timeout: a stream whose request has not fully arrived `messageTimeoutMs` after its headers is
 *   reset (RST_STREAM CANCEL); its call ends as cancelled. Envoy sends a request whole at once.
 * - idle connections: a connection with no open stream for `idleTimeoutMs` is closed gracefully (GOAWAY
 *   NO_ERROR; the peer reconnects when it next needs to). Envoy keeps its connection and reopens it at will,
 *   so the default is minutes, long past the gaps of a live proxy.
 * - rapid reset (CVE-2023-44487): on a connection that has never carried a call, a stream the peer resets
 *   (RST_STREAM other than NO_ERROR) before any of its request arrived spends a token of the connection's
 *   bucket (GRPC_RESET_BURST, refilled at GRPC_RESET_RATE_PER_S). Once a stream has carried a request, answered
 *   or cancelled, the connection is a client's and is never retired for its resets: Envoy cancels the
 *   rate-limit call of every request whose client resets or goes away, thousands a second under a reset storm
 *   at Envoy, and runs of thousands of those cancels reach the service before their calls' messages (its HTTP/2
 *   stack sends RST_STREAM ahead of pending DATA). Retiring Envoy's connection would fail its calls in flight
 *   and let them pass unlimited. A reset that carried no request costs the service a stream object (nothing
 *   reaches the engine), and open streams stay capped per connection. A connection that only opens and resets
 *   streams, an attacker at the port itself, runs dry after the burst and is retired on its own: GOAWAY
 *   ENHANCE_YOUR_CALM naming the last stream processed, so the calls already in flight are answered, no new
 *   stream is accepted on it, and it is cut `retireGraceMs` later if the peer holds it open. The peer's next
 *   connection is accepted with a fresh bucket. (nghttp2's own bound, a GOAWAY past 1,000 resets refilled at 33
 *   a second whatever the streams carried, is lifted: nghttp2-bounds.ts.) Refusing a client
 *   *address* would refuse Envoy and switch its limits off (failure_mode_deny: false): that is only done
 *   when asked (`refuseAddress`): resets then also spend a bucket per address (peer-buckets.ts), and an
 *   address that runs dry has its new connections closed at once until half its burst has refilled.
 *   Unix-socket clients share one address.
 *
 * One guard serves all the listeners of a transport, so the bounds are per process.
 */
import type * as net from 'node:net';
import * as http2 from 'node:http2';
import { PeerBuckets, TokenBucket } from './peer-buckets.js';

const { NGHTTP2_NO_ERROR, NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

export const GUARD_ACTIONS = ['connection_refused', 'peer_refused', 'message_timeout', 'idle_close', 'reset_goaway'] as const;
export type GuardAction = (typeof GUARD_ACTIONS)[number];

export interface GuardOptions {
  readonly maxConnections: number;
  readonly messageTimeoutMs: number;
  readonly idleTimeoutMs: number;
  /** Resets one connection may send at once, and per second after that. */
  readonly resetBurst: number;
  readonly resetRatePerS: number;
  /** Also count resets per client address and refuse an address that runs dry (default false: see above). */
  readonly refuseAddress?: boolean;
  /** How long a connection retired for its resets may keep finishing its calls (default 10 s). */
  readonly retireGraceMs?: number;
  /** Monotonic ms for the reset buckets (default performance.now). */
  readonly nowMs?: () => number;
  readonly onAction?: (action: GuardAction) => void;
  /** Paths of bidirectional-streaming methods, whose request never ends: no message timeout for them. */
  readonly longLivedPaths?: ReadonlySet<string>;
}

type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;

/** A connection's reset budget, spent only until it carries its first call. */
interface ResetState {
  readonly bucket: TokenBucket;
  calling: boolean;
}

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
  private readonly nowMs: () => number;
  /** Per address, only with `refuseAddress`. */
  private readonly addresses: PeerBuckets | undefined;
  /** Streams this guard reset itself: not the peer's resets. */
  private readonly ours = new WeakSet<http2.ServerHttp2Stream>();

  constructor(private readonly options: GuardOptions) {
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.addresses =
      options.refuseAddress === true ? new PeerBuckets({ burst: options.resetBurst, ratePerS: options.resetRatePerS, nowMs: this.nowMs }) : undefined;
  }

  /** Open HTTP/2 connections (sessions) now. */
  private drain: ((session: http2.ServerHttp2Session) => void) | undefined;

  get connections(): number {
    return this.sessions;
  }

  /**
   * `drain`: how an idle connection is closed (lean-server.ts: in two steps, so that a call the peer sends as the
   * connection goes is still taken); default one GOAWAY.
   */
  attach(server: AnyHttp2Server, drain?: (session: http2.ServerHttp2Session) => void): void {
    this.drain = drain;
    const addresses = this.addresses;
    // Before node:http2's own listener, which makes the session: a refused peer costs no TLS or HTTP/2 work.
    if (addresses !== undefined) {
      server.prependListener('connection', (socket: net.Socket) => {
        if (addresses.refused(peerOf(socket))) {
          this.options.onAction?.('peer_refused');
          socket.destroy();
        }
      });
    }
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
    const resets: ResetState = { bucket: new TokenBucket(this.options.resetBurst, this.options.resetRatePerS, this.nowMs), calling: false };
    let active = 0;
    let idle: NodeJS.Timeout | undefined;
    const arm = () => {
      idle = setTimeout(() => {
        this.options.onAction?.('idle_close');
        // GOAWAY NO_ERROR: in-flight streams (none) finish, the peer reconnects when it needs to
        if (this.drain !== undefined) this.drain(session);
        else session.close();
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
        this.countReset(stream, session, resets, peer);
      });
    });
  }

  /**
   * Resets the stream if its request has not fully arrived in time. The listeners are shared functions that
   * find the timer on the stream (no closures or `once` wrappers per call: allocation per request).
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

  /**
   * A stream that carried a request is a call, answered or cancelled: from then on its connection is a client's,
   * never retired for resets. On a connection that never carried one, a stream that the peer reset before any of
   * its request arrived spends a token (and one of its address, when asked).
   */
  private countReset(stream: http2.ServerHttp2Stream, session: http2.ServerHttp2Session, resets: ResetState, peer: string): void {
    if (stream.readableDidRead) {
      resets.calling = true;
      return;
    }
    const code = stream.rstCode;
    if (code === NGHTTP2_NO_ERROR || this.ours.has(stream) || session.closed || session.destroyed) return;
    const connectionOk = resets.calling || resets.bucket.take();
    const addressOk = this.addresses === undefined || this.addresses.take(peer);
    if (connectionOk && addressOk) return;
    this.options.onAction?.('reset_goaway');
    refuse(session, this.options.retireGraceMs ?? 10_000);
  }
}

/**
 * GOAWAY ENHANCE_YOUR_CALM naming the last stream processed, then close: the streams already open finish
 * (nghttp2 ignores new ones), and the connection is cut `graceMs` later whatever the peer does.
 * (session.destroy with a code sends NO_ERROR.)
 */
function refuse(session: http2.ServerHttp2Session, graceMs = 1000): void {
  session.on('error', () => undefined);
  if (session.closed || session.destroyed) return;
  session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
  session.close();
  setTimeout(() => session.destroyed || session.destroy(), graceMs).unref();
}

function peerOf(socket: net.Socket): string {
  return socket.remoteAddress ?? 'unix';
}
