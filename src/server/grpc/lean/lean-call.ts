/**
 * One gRPC call on the lean transport: reads the single request message from the HTTP/2 stream (gRPC
 * framing, size limit, no compression), runs the route under the caller's deadline, and ends the stream with
 * the answer and its trailers, or with a trailers-only error. Every path ends the stream exactly once; a
 * cancelled (RST_STREAM) or expired call aborts the route's signal and is never answered twice.
 */
import * as http2 from 'node:http2';
import { Code, encodeGrpcMessage, frame, GrpcStatusError } from './grpc-wire.js';
import type { CallSignal, StreamRoute, UnaryRoute } from './routes.js';

const { HTTP2_HEADER_STATUS, HTTP2_HEADER_CONTENT_TYPE, NGHTTP2_NO_ERROR } = http2.constants;
const OK_HEADERS = { [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc' };
const OK_TRAILERS = { 'grpc-status': '0' };
const RESPOND_OPTIONS = { waitForTrailers: true, sendDate: false };
const END_OPTIONS = { endStream: true, sendDate: false };

/**
 * The stream's listeners are shared functions that find their call on the stream, not closures made per
 * call: a ShouldRateLimit call added five closures and a `once` wrapper, and adding listeners was about 5 %
 * of the service's CPU on Redis in the profile.
 */
const kCall = Symbol('leanCall');
type CallStream = http2.ServerHttp2Stream & { [kCall]: LeanCall };

function onStreamData(this: CallStream, chunk: Buffer): void {
  this[kCall].onData(chunk);
}
function onStreamEnd(this: CallStream): void {
  this[kCall].onEnd();
}
/** 'close' follows every 'error' (a reset stream), so the call listens to 'close' alone. */
function onStreamClose(this: CallStream): void {
  this[kCall].cancel();
}
/** Fires once per stream (respond with waitForTrailers). */
function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}
function expireCall(call: LeanCall): void {
  call.expire();
}

export interface CallHooks {
  /** Largest request message accepted, bytes. */
  readonly maxMessageBytes: number;
  /** Maps a route's error to a status (GrpcStatusError is taken as it is). */
  readonly toStatus: (err: unknown) => { code: number; details: string };
  /** The call ended with a status; `method` is the path's last part. */
  readonly onFinished?: (method: string, code: number, seconds: number, err?: unknown) => void;
  /** A unary answer was handed over after the deadline (less `unseenWaitMs`). */
  readonly onLate?: (method: string) => void;
  /** An answer took this long to be written, ms. */
  readonly onSendDelay?: (ms: number) => void;
  readonly unseenWaitMs?: () => number;
}

/** Ends `stream` at once with a status and no message (a trailers-only response). */
export function answerError(stream: http2.ServerHttp2Stream, code: number, details: string, extra?: Record<string, string>): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ...OK_HEADERS, 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details), ...extra }, END_OPTIONS);
}

export class LeanCall implements CallSignal {
  private chunks: Buffer[] = [];
  private received = 0;
  private expected = -1;
  private done = false;
  private expired = false;
  private lateCounted = false;
  private timer: NodeJS.Timeout | undefined;
  private controller: AbortController | undefined;
  private readonly started = performance.now();

  /**
   * `route` is a unary route, or a streaming one when `streaming` is set. The stream must have an 'error'
   * listener already (the server adds one to every stream before anything else).
   */
  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly method: string,
    private readonly route: UnaryRoute | StreamRoute,
    private readonly streaming: boolean,
    private readonly deadlineMs: number | undefined,
    private readonly hooks: CallHooks,
    readonly headers?: http2.IncomingHttpHeaders,
  ) {
    (stream as CallStream)[kCall] = this;
    stream.on('data', onStreamData);
    stream.on('end', onStreamEnd);
    stream.on('close', onStreamClose);
    if (deadlineMs !== undefined) {
      const left = deadlineMs - Date.now();
      this.timer = setTimeout(expireCall, left > 0 ? left : 0, this);
    }
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      // Made after the call ended (made on first use): aborted already, as it would have been.
      if (this.done) this.controller.abort(new GrpcStatusError(this.expired ? Code.DEADLINE_EXCEEDED : Code.CANCELLED, 'call ended'));
    }
    return this.controller.signal;
  }

  /**
   * Chunks are kept as they come and joined once, at the end: a Buffer.concat per DATA frame made a 1 MB
   * message in 256-byte frames copy about 2 GB (quadratic). Only the 5-byte prefix is read early, to refuse
   * a compressed or oversized message while it is still arriving.
   */
  onData(chunk: Buffer): void {
    if (this.done) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.expected < 0 && this.received >= 5) {
      const head = this.chunks[0]!.length >= 5 ? this.chunks[0]! : Buffer.concat(this.chunks);
      if (head[0] !== 0) {
        this.fail(
          Code.INTERNAL,
          head[0] === 1 ? 'compressed message received without grpc-encoding; compression is not supported' : `invalid message flag ${head[0]}`,
        );
        return;
      }
      const len = head.readUInt32BE(1);
      if (len > this.hooks.maxMessageBytes) {
        this.fail(Code.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${this.hooks.maxMessageBytes})`);
        return;
      }
      this.expected = 5 + len;
    }
    if (this.expected >= 0 && this.received > this.expected) this.fail(Code.INTERNAL, 'received more than one message for a unary request');
  }

  onEnd(): void {
    if (this.done) return;
    // Reset already (its RST_STREAM was read before the end of its message was handed over, as Envoy's cancels
    // come under a storm): the call ends as cancelled without reaching the route.
    if (this.stream.closed) {
      this.cancel();
      return;
    }
    if (this.chunks.length === 0 || this.expected < 0 || this.received < this.expected) {
      this.fail(Code.INTERNAL, this.chunks.length === 0 ? 'no request message received' : 'incomplete request message');
      return;
    }
    const whole = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.received);
    const request = whole.subarray(5, this.expected);
    this.chunks = [];
    if (!this.streaming) {
      const route = this.route as UnaryRoute;
      let pending: Promise<Uint8Array>;
      try {
        pending = route(request, this.deadlineMs, this);
      } catch (err) {
        this.failWith(err);
        return;
      }
      pending.then(
        (bytes) => this.answer(route.framed === true ? bytes : frame(bytes)),
        (err: unknown) => this.failWith(err),
      );
    } else this.startStream(this.route as StreamRoute, request);
  }

  /** `framed`: the message with its 5-byte gRPC header. */
  private answer(framed: Uint8Array): void {
    if (this.done) {
      this.lateAfterExpiry();
      return;
    }
    this.finish(Code.OK);
    const stream = this.stream;
    if (stream.destroyed) return;
    this.checkLate();
    const handed = performance.now();
    stream.respond(OK_HEADERS, RESPOND_OPTIONS);
    stream.on('wantTrailers', sendOkTrailers);
    const onSent = this.hooks.onSendDelay;
    stream.end(framed, onSent === undefined ? undefined : () => onSent(performance.now() - handed));
  }

  private startStream(route: StreamRoute, request: Buffer): void {
    const stream = this.stream;
    const open = () => {
      if (stream.headersSent) return;
      stream.respond(OK_HEADERS, RESPOND_OPTIONS);
      stream.on('wantTrailers', sendOkTrailers);
    };
    const sink = {
      write: (message: Uint8Array) => {
        if (this.done || stream.destroyed) return;
        open();
        stream.write(frame(message));
      },
      end: () => {
        if (this.done) return;
        this.finish(Code.OK);
        if (stream.destroyed) return;
        open();
        stream.end();
      },
    };
    try {
      route(request, sink, this);
    } catch (err) {
      this.failWith(err);
    }
  }

  /**
   * The route answered after the deadline timer had already ended the call (e.g. the event loop was blocked
   * past the deadline): still a late answer.
   */
  private lateAfterExpiry(): void {
    if (this.expired && !this.lateCounted) this.checkLate();
  }

  private checkLate(): void {
    this.lateCounted = true;
    if (this.deadlineMs !== undefined && this.hooks.onLate !== undefined && Date.now() > this.deadlineMs - (this.hooks.unseenWaitMs?.() ?? 0))
      this.hooks.onLate(this.method);
  }

  private failWith(err: unknown): void {
    if (this.done) {
      // The route gave up because the call ended (its signal's reason, e.g. a delayed wait stopped): not an answer.
      if (this.controller === undefined || err !== this.controller.signal.reason) this.lateAfterExpiry();
      return;
    }
    const s = err instanceof GrpcStatusError ? { code: err.code, details: err.message } : this.hooks.toStatus(err);
    this.checkLate();
    this.fail(s.code, s.details, err);
  }

  /** Answers with an error status; stops reading the rest of the request, if any. */
  private fail(code: number, details: string, err?: unknown): void {
    if (this.done) return;
    this.finish(code, err);
    const stream = this.stream;
    if (stream.destroyed) return;
    if (stream.headersSent) {
      stream.sendTrailers({ 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) });
      return;
    }
    answerError(stream, code, details);
    // The caller may still be sending (e.g. an oversized message): stop it once the status is out.
    if (!stream.readableEnded) setImmediate(() => stream.destroyed || stream.close(NGHTTP2_NO_ERROR));
  }

  expire(): void {
    if (this.done) return;
    this.expired = true;
    this.controller?.abort(new GrpcStatusError(Code.DEADLINE_EXCEEDED, 'Deadline exceeded'));
    this.fail(Code.DEADLINE_EXCEEDED, 'Deadline exceeded');
  }

  /** RST_STREAM from the caller, or the stream closed under us. */
  cancel(): void {
    if (this.done) return;
    this.finish(Code.CANCELLED);
    this.controller?.abort(new GrpcStatusError(Code.CANCELLED, 'call cancelled'));
  }

  private finish(code: number, err?: unknown): void {
    this.done = true;
    clearTimeout(this.timer);
    this.hooks.onFinished?.(this.method, code, (performance.now() - this.started) / 1000, err);
  }
}
