/**
 * The first GOAWAY of a graceful drain (last stream 2^31−1: "open no new stream; the ones you sent are still
 * taken"), written beside Node's HTTP/2 stack. nghttp2 cannot send it: once it has sent any GOAWAY it ignores
 * every new stream without a word, and stops reading a connection with no stream open, PING ack included, so the
 * streams a client sent before it read the GOAWAY would hang until the client's timeout. Written beside it,
 * nghttp2 never learns of the notice and goes on accepting streams until it sends the second GOAWAY, its own.
 *
 * The frame must go out whole between two of nghttp2's writes:
 * - a plain TCP or Unix socket queues writes whole and in order: the frame is written to the socket itself;
 * - Node's TLS layer takes one write at a time (a second one in flight aborts the process), so a TLS
 *   connection's HTTP/2 session is given a passage (TlsPassage) instead of the TLS socket: every batch of frames
 *   nghttp2 writes reaches the TLS socket as one write, and the notice goes in between two of them. It costs a
 *   pass through JavaScript per read and write, so it is set up only where connections age.
 *
 * `noticeWriter(server)` returns how to send the notice on one of that server's sessions; false when it cannot
 * (the session came another way, or is closing).
 */
import type * as net from 'node:net';
import type * as http2 from 'node:http2';
import { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';

/** GOAWAY: length 8, type 0x7, no flags, stream 0; last stream 2^31−1, NO_ERROR. */
export const GOAWAY_NOTICE = Buffer.from([0, 0, 8, 7, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

export type NoticeWriter = (session: http2.ServerHttp2Session) => boolean;

/** Set on each plain socket as it connects; read back through the session's socket proxy. */
const PLAIN_SOCKET = Symbol('plain socket');

type AnyHttp2Server = http2.Http2Server | http2.Http2SecureServer;
type Listener = (this: unknown, socket: unknown) => void;

export function noticeWriter(server: AnyHttp2Server): NoticeWriter {
  if ('setSecureContext' in server) return tlsNoticeWriter(server);
  server.on('connection', (socket: net.Socket) => Object.assign(socket, { [PLAIN_SOCKET]: socket }));
  return (session) => {
    const socket = (session.socket as unknown as Record<symbol, net.Socket | undefined> | undefined)?.[PLAIN_SOCKET];
    if (socket === undefined || !socket.writable) return false;
    socket.write(GOAWAY_NOTICE);
    return true;
  };
}

function tlsNoticeWriter(server: http2.Http2SecureServer): NoticeWriter {
  const passages = new WeakMap<http2.ServerHttp2Session, TlsPassage>();
  // node:http2's own listener, which makes a session of each TLS connection
  const h2 = server.listeners('secureConnection').find((l) => l.name === 'connectionListener') as Listener | undefined;
  if (h2 === undefined) return () => false;
  let passing: TlsPassage | undefined;
  server.removeListener('secureConnection', h2);
  server.on('secureConnection', (tls: TLSSocket) => {
    // refused already (client certificate), or not HTTP/2: node:http2 deals with it its own way
    if (tls.destroyed || tls.alpnProtocol !== 'h2') return h2.call(server, tls);
    passing = new TlsPassage(tls);
    try {
      h2.call(server, passing);
    } finally {
      passing = undefined;
    }
  });
  // first of the 'session' listeners, so that the others see the peer's address
  server.prependListener('session', (session) => {
    if (passing === undefined) return;
    passages.set(session, passing);
    // the session's socket is node's wrapper around the passage: give it the peer's address
    Object.assign(session.socket, { _peername: { address: passing.tls.remoteAddress, port: passing.tls.remotePort, family: passing.tls.remoteFamily } });
  });
  return (session) => passages.get(session)?.notice() ?? false;
}

/** A TLS socket as a plain duplex, so that node:http2 writes to it in whole batches through JavaScript. */
class TlsPassage extends Duplex {
  constructor(readonly tls: TLSSocket) {
    super();
    tls.on('data', (chunk: Buffer) => this.push(chunk) || tls.pause());
    tls.on('end', () => this.push(null));
    tls.on('error', (err: Error) => this.destroy(err));
    tls.on('close', () => this.destroy());
  }

  notice(): boolean {
    if (!this.tls.writable) return false;
    this.tls.write(GOAWAY_NOTICE);
    return true;
  }

  override _read(): void {
    this.tls.resume();
  }

  // node:http2 writes each batch corked: one call here, one TLS write
  override _writev(chunks: { chunk: Buffer }[], done: (err?: Error | null) => void): void {
    const tls = this.tls;
    tls.cork(); // one TLS write for the batch
    for (let i = 0; i < chunks.length - 1; i++) tls.write(chunks[i]!.chunk);
    tls.write(chunks[chunks.length - 1]!.chunk, done);
    tls.uncork();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    this.tls.write(chunk, done);
  }

  override _final(done: () => void): void {
    this.tls.end();
    done();
  }

  override _destroy(err: Error | null, done: (err: Error | null) => void): void {
    this.tls.destroy();
    done(err);
  }
}
