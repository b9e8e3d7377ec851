/**
 * A bidirectional-streaming call on the lean transport: messages are cut out of the HTTP/2 stream as they
 * arrive (5-byte gRPC prefix; at most one message, never more than the size limit, is buffered), handed to
 * the route, and the route's messages written back as they come. The response headers go out at once; the
 * call ends with trailers carrying the route's status, or is cut by the client (RST_STREAM) or the
 * connection. Every path reports `closed` exactly once.
 */
import * as http2 from 'node:http2';
import { Code, encodeGrpcMessage, frame } from '../lean/grpc-wire.js';
import { MAX_UNREAD_BYTES, NOT_READING, type BidiHandlers, type BidiRoute } from './bidi-route.js';

const { HTTP2_HEADER_STATUS, HTTP2_HEADER_CONTENT_TYPE, NGHTTP2_NO_ERROR } = http2.constants;
const RESPOND_OPTIONS = { waitForTrailers: true, sendDate: false };

export function startLeanBidiCall(stream: http2.ServerHttp2Stream, route: BidiRoute, portMaxMessageBytes: number): void {
  const maxMessageBytes = route.maxMessageBytes ?? portMaxMessageBytes;
  const maxUnreadBytes = route.maxUnreadBytes ?? MAX_UNREAD_BYTES;
  let over = false;
  let status = { code: Code.OK as number, details: '' };
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  stream.respond({ [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc' }, RESPOND_OPTIONS);
  stream.on('wantTrailers', () => {
    stream.sendTrailers({ 'grpc-status': String(status.code), ...(status.details === '' ? {} : { 'grpc-message': encodeGrpcMessage(status.details) }) });
    // A client that has not ended its side is not waited for: the call is over (RST_STREAM NO_ERROR, as gRPC allows).
    if (!stream.readableEnded) setImmediate(() => stream.destroyed || stream.close(NGHTTP2_NO_ERROR));
  });
  const socket = stream.session?.socket;
  let handlers: BidiHandlers | undefined = undefined; // set once route() returns; end() may come before
  handlers = route({
    write: (message) => {
      if (over || stream.destroyed) return;
      if (stream.bufferSize > maxUnreadBytes) fail(Code.RESOURCE_EXHAUSTED, NOT_READING);
      else stream.write(frame(message));
    },
    end: (code = Code.OK, details = '') => {
      if (over) return;
      status = { code, details };
      finish();
      if (!stream.destroyed) stream.end();
    },
    connection: stream.session ?? stream,
    peer: socket?.remoteAddress === undefined ? 'unknown' : `${socket.remoteAddress}:${socket.remotePort ?? 0}`,
  });
  // The route may end the call before it returns its handlers (a refusal): they are told once they exist.
  if (over) handlers.closed();
  function finish(): void {
    if (over) return;
    over = true;
    pending = [];
    handlers?.closed();
  }
  const fail = (code: number, details: string) => {
    if (over) return;
    status = { code, details };
    finish();
    if (!stream.destroyed) stream.end();
  };
  stream.on('data', (chunk: Buffer) => {
    if (over) return;
    pending.push(chunk);
    pendingBytes += chunk.length;
    while (!over && pendingBytes >= 5) {
      const head = pending[0]!.length >= 5 ? pending[0]! : (pending = [Buffer.concat(pending)])[0]!;
      if (head[0] !== 0)
        return fail(
          Code.INTERNAL,
          head[0] === 1 ? 'compressed message received without grpc-encoding; compression is not supported' : `invalid message flag ${head[0]}`,
        );
      const len = head.readUInt32BE(1);
      if (len > maxMessageBytes) return fail(Code.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${maxMessageBytes})`);
      if (pendingBytes < 5 + len) return;
      const whole = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
      const message = whole.subarray(5, 5 + len);
      const rest = whole.subarray(5 + len);
      pending = rest.length > 0 ? [rest] : [];
      pendingBytes = rest.length;
      handlers.message(message);
    }
  });
  stream.on('end', () => {
    if (over) return;
    if (pendingBytes > 0) return fail(Code.INTERNAL, 'incomplete request message');
    handlers.halfClose();
  });
  stream.on('close', finish);
}
