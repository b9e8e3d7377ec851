/**
 * Connections age out (GRPC_MAX_CONNECTION_AGE, GRPC_MAX_CONNECTION_AGE_GRACE), as gRPC servers do with
 * MaxConnectionAge: Envoy keeps one HTTP/2 connection to the rate-limit Service for as long as both live, so a
 * replica added by a scale-out gets calls only from connections opened after it came up. Aging every connection
 * makes each Envoy reconnect in turn, and the Service spreads the new connections over every replica.
 *
 * The age of each connection is spread by ±10% (uniform), so the connections one start or one scale-out opened
 * together do not all reconnect at once. At its age a connection is drained without refusing a call:
 *  1. GOAWAY NO_ERROR naming stream 2^31−1 (every stream the peer may already have sent is still accepted) and
 *     a PING: the peer stops opening streams on it and opens a new connection for its next calls;
 *  2. once the PING is answered, every stream the peer sent before it read the first GOAWAY has arrived:
 *     a second GOAWAY names the last of them, and the connection closes when its calls in flight are answered;
 *  3. `graceMs` after the age, a connection still open (a call that never ends, or a peer that never answers
 *     the PING) is cut.
 * A peer that does not answer the PING within `graceMs` (or 60 s without a grace) gets the second GOAWAY
 * all the same.
 *
 * Timers run only while a connection is open, one per connection (unref'd).
 */
import * as http2 from 'node:http2';

const { NGHTTP2_NO_ERROR } = http2.constants;
const LAST_STREAM = 2 ** 31 - 1;
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
  server.on('session', (session: http2.ServerHttp2Session) => {
    if (session.closed || session.destroyed) return;
    const timer = setTimeout(drain, Math.min(jitteredAgeMs(options.ageMs, random), 2 ** 31 - 1), session, options);
    timer.unref();
    session.once('close', () => clearTimeout(timer));
  });
}

function drain(session: http2.ServerHttp2Session, options: ConnectionAgeOptions): void {
  if (session.closed || session.destroyed) return;
  options.onAged?.();
  const timers: NodeJS.Timeout[] = [];
  session.once('close', () => timers.forEach(clearTimeout));
  let closed = false;
  const close = () => {
    if (closed || session.closed || session.destroyed) return;
    closed = true;
    session.close(); // GOAWAY naming the last stream received; closes once its streams are done
  };
  if (options.graceMs > 0) timers.push(setTimeout(() => session.destroyed || session.destroy(), options.graceMs).unref());
  timers.push(setTimeout(close, Math.min(options.graceMs > 0 ? options.graceMs : PING_WAIT_MS, PING_WAIT_MS)).unref());
  session.goaway(NGHTTP2_NO_ERROR, LAST_STREAM);
  if (!session.ping(close)) close();
}
