/**
 * Closing one HTTP/2 connection without refusing a call the peer already sent: used when a connection reaches
 * its age (connection-age.ts) and when the server shuts down (lean-server.ts close()).
 *  1. a GOAWAY NO_ERROR naming stream 2^31−1 (every stream the peer may already have sent is still accepted), then
 *     a PING: the peer stops opening streams on it and opens a new connection for its next calls;
 *  2. once the PING is answered, every stream the peer sent before it read the GOAWAY has arrived: a second
 *     GOAWAY names the last of them, and the connection closes when its calls in flight are answered;
 *  3. `graceMs` after the start, a connection still open (a call that never ends, or a peer that never answers
 *     the PING) is cut.
 *
 * The first GOAWAY is written beside Node's HTTP/2 stack, which cannot send it (goaway-notice.ts). Where it
 * cannot be written, the connection is drained in one step, the second GOAWAY alone: a stream the peer sent as it
 * went out is refused with it.
 *
 * The notice follows the server's SETTINGS, the first frame of every connection. Timers run only while the
 * connection is open (unref'd).
 */
import type * as http2 from 'node:http2';
import type { NoticeWriter } from './goaway-notice.js';

/** The longest wait for the PING's answer when no grace bounds it, ms. */
const PING_WAIT_MS = 60_000;

/** `graceMs`: how long the connection may stay open once the drain starts, ms; 0 = no bound. */
export function drainSession(session: http2.ServerHttp2Session, notice: NoticeWriter | undefined, graceMs: number): void {
  if (session.closed || session.destroyed) return;
  const timers: NodeJS.Timeout[] = [];
  session.once('close', () => timers.forEach(clearTimeout));
  const close = () => {
    if (!session.closed && !session.destroyed) session.close(); // GOAWAY naming the last stream received
  };
  if (graceMs > 0) timers.push(setTimeout(() => session.destroyed || session.destroy(), graceMs).unref());
  timers.push(setTimeout(close, Math.min(graceMs > 0 ? graceMs : PING_WAIT_MS, PING_WAIT_MS)).unref());
  const start = () => {
    if (session.closed || session.destroyed) return;
    if (notice === undefined || !notice(session)) return close(); // one step
    if (!session.ping(close)) close();
  };
  // The server's SETTINGS open the connection, and nghttp2 may not have written them yet on a connection just
  // accepted: the notice waits for the peer to acknowledge them.
  if (session.pendingSettingsAck) session.once('localSettings', start);
  else start();
}
