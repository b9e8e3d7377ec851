/**
 * The lean transport's route table: a gRPC method path → a function of the request message's bytes.
 * A unary route answers with the response message's bytes (unframed) or throws: a GrpcStatusError for a
 * chosen status, anything else is mapped by the server's `toStatus`. `deadlineMs` is the caller's
 * deadline in wall-clock time (Date.now()), undefined when it sent none; `call.signal` aborts when the
 * caller cancels or the deadline passes (it is made on first use: an AbortController per call cost 7 % of
 * the CPU of a ShouldRateLimit call, and most routes never look). A new service plugs in with one line:
 *
 *   routes.unary.set('/envoy.service.auth.v3.Authorization/Check', (bytes, deadline, call) => check(bytes, deadline, call.signal));
 */
import type * as http2 from 'node:http2';
import type { BidiRoute } from '../bidi/bidi-route.js';

/** What a route may ask of its call. */
export interface CallSignal {
  readonly signal: AbortSignal;
  /** The call's request headers (read by tracing for the caller's trace context). */
  readonly headers?: http2.IncomingHttpHeaders;
}

export type UnaryRoute = ((request: Buffer, deadlineMs: number | undefined, call: CallSignal) => Promise<Uint8Array>) & {
  /** The answer already starts with the 5-byte gRPC message header (its encoder left room for it): sent as it is. */
  readonly framed?: true;
};

/**
 * A route whose encoder writes the gRPC message header in place (e.g. encodeRateLimitResponse(d, 5)): the
 * call sends its bytes without copying them into a framed buffer (a copy and an allocation per answer).
 */
export function framedRoute(route: (request: Buffer, deadlineMs: number | undefined, call: CallSignal) => Promise<Uint8Array>): UnaryRoute {
  return Object.assign(route, { framed: true as const });
}

/** The sending half of a server-streaming call. */
export interface StreamSink {
  write(message: Uint8Array): void;
  /** Ends the call with status OK. */
  end(): void;
}

/** A server-streaming route: called once with the request; `call.signal` aborts when the call ends from outside. */
export type StreamRoute = (request: Buffer, sink: StreamSink, call: CallSignal) => void;

export interface RouteTable {
  readonly unary: Map<string, UnaryRoute>;
  readonly streaming: Map<string, StreamRoute>;
  /** Bidirectional-streaming methods (server/grpc/bidi/). */
  readonly bidi: Map<string, BidiRoute>;
}

export function routeTable(): RouteTable {
  return { unary: new Map(), streaming: new Map(), bidi: new Map() };
}
