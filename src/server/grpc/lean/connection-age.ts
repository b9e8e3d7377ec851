/**
 * Connections age out (GRPC_MAX_CONNECTION_AGE, GRPC_MAX_CONNECTION_AGE_GRACE), as gRPC servers do with
 * MaxConnectionAge: Envoy keeps one HTTP/2 connection to the rate-limit Service for as long as both live, so a
 * replica added by a scale-out gets calls only from connections opened after it came up. Aging every connection
 * makes each Envoy reconnect in turn, and the Service spreads the new connections over every replica.
 *
 * The age of each connection is spread by ±10% (uniform), so the connections one start or one scale-out opened
 * together do not all reconnect at once. At its age a connection is drained in two steps without refusing a call
 * (drain-session.ts), and cut `graceMs` after its age if still open.
 *
 * One timer per open connection (unref'd).
 */
import type * as http2 from 'node:http2';
import { drainSession } from './drain-session.js';
import type { NoticeWriter } from './goaway-notice.js';

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

/** `notice`: the server's notice writer (goaway-notice.ts; a server has at most one). */
export function ageConnections(server: AnyHttp2Server, options: ConnectionAgeOptions, notice: NoticeWriter): void {
  if (options.ageMs <= 0) return;
  const random = options.random ?? Math.random;
  server.on('session', (session: http2.ServerHttp2Session) => {
    if (session.closed || session.destroyed) return;
    const timer = setTimeout(aged, Math.min(jitteredAgeMs(options.ageMs, random), 2 ** 31 - 1), session, notice, options);
    timer.unref();
    session.once('close', () => clearTimeout(timer));
  });
}

function aged(session: http2.ServerHttp2Session, notice: NoticeWriter, options: ConnectionAgeOptions): void {
  if (session.closed || session.destroyed) return;
  options.onAged?.();
  drainSession(session, notice, options.graceMs);
}
