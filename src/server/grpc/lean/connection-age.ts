/**
 * Connections age out (GRPC_MAX_CONNECTION_AGE, GRPC_MAX_CONNECTION_AGE_GRACE), as gRPC servers do with
 * MaxConnectionAge: Envoy keeps one HTTP/2 connection to the rate-limit Service for as long as both live, so a
 * replica added by a scale-out gets calls only from connections opened after it came up. Aging every connection
 * makes each Envoy reconnect in turn, and the Service spreads the new connections over every replica.
 *
 * The age of each connection is spread by ±10% (uniform), so the connections one start or one scale-out opened
 * together do not all reconnect at once. At its age a connection is drained without refusing a call:
 *  1. a GOAWAY NO_ERROR naming stream 2^31−1 (every stream the peer may already have sent is still accepted), then
 *     a PING: the peer stops opening streams on it and opens a new connection for its next calls;
 *  2. once the PING is answered, every stream the peer sent before it read the GOAWAY has arrived: a second
 *     GOAWAY names the last of them, and the connection closes when its calls in flight are answered;
 *  3. `graceMs` after the age, a connection still open (a call that never ends, or a peer that never answers
 *     the PING) is cut.
 *
 * The first GOAWAY is written beside Node's HTTP/2 stack, which cannot send it (goaway-notice.ts). Where it
 * cannot be written, the connection is drained in one step, the second GOAWAY alone: a stream the peer sent as it
 * went out is refused with it (REFUSED_STREAM, at once, never left to hang).
 *
 * Timers run only while a connection is open, one per connection (unref'd).
 */
import type * as http2 from 'node:http2';
import { noticeWriter, type NoticeWriter } from './goaway-notice.js';

const PING_WAIT_MS = 60_000;

export interface ConnectionAgeOptions {
  /** Age of a connection before it is drained, ms, spread ±10%; 0 = never. */
  readonly ageMs: number;
  /** After the age, how long calls still open may run before the connection is cut, ms; 0 = no bound. */
  readonly graceMs: number;
  /** Uniform in [0, 1) (default Math.random): the jitter. */
  readonly random?: () => number;
  /** A connection reached its age and is being drained. */
  readonly onAged?: () => void;
}

/** The age of one connection: `ageMs` ± 10%, as gRPC spreads MaxConnectionAge. */
export function jitteredAgeMs(ageMs: number, random: () => number): number {
  return Math.round(ageMs + (random() * 2 - 1) * ageMs * 0.1);
}

type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;

export function ageConnections(server: AnyHttp2Server, options: ConnectionAgeOptions): void {
  if (options.ageMs <= 0) return;
  const random = options.random ?? Math.random;
  const notice = noticeWriter(server);
  server.on('session', (session: http2.ServerHttp2Session) => {
    if (session.closed || session.destroyed) return;
    const timer = setTimeout(drain, Math.min(jitteredAgeMs(options.ageMs, random), 2 ** 31 - 1), session, notice, options);
    timer.unref();
    session.once('close', () => clearTimeout(timer));
  });
}

function drain(session: http2.ServerHttp2Session, notice: NoticeWriter, options: ConnectionAgeOptions): void {
  if (session.closed || session.destroyed) return;
  options.onAged?.();
  const timers: NodeJS.Timeout[] = [];
  session.once('close', () => timers.forEach(clearTimeout));
  const close = () => {
    if (!session.closed && !session.destroyed) session.close(); // GOAWAY naming the last stream received
  };
  if (options.graceMs > 0) timers.push(setTimeout(() => session.destroyed || session.destroy(), options.graceMs).unref());
  if (!notice(session)) return close(); // one step
  timers.push(setTimeout(close, Math.min(options.graceMs > 0 ? options.graceMs : PING_WAIT_MS, PING_WAIT_MS)).unref());
  if (!session.ping(close)) close();
}
