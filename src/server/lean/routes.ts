/**
 * The lean transport's route table: a gRPC method path → a function of the request message's bytes.
 * A unary route answers with the response message's bytes (unframed) or throws: a GrpcStatusError for a
 * chosen status, anything else is mapped by the server's `toStatus`. `deadlineMs` is the caller's
 * deadline in wall-clock time (Date.now()), undefined when it sent none; `signal` aborts when the caller
 * cancels, the deadline passes or the server is cut off. A new service plugs in with one line:
 *
 *   routes.set('/envoy.service.auth.v3.Authorization/Check', (bytes, deadline, signal) => ...);
 */

export type UnaryRoute = (request: Buffer, deadlineMs: number | undefined, signal: AbortSignal) => Promise<Uint8Array>;

/** The sending half of a server-streaming call. */
export interface StreamSink {
  write(message: Uint8Array): void;
  /** Ends the call with status OK. */
  end(): void;
}

/** A server-streaming route: called once with the request; `signal` aborts when the call ends from outside. */
export type StreamRoute = (request: Buffer, sink: StreamSink, signal: AbortSignal) => void;

export interface RouteTable {
  readonly unary: Map<string, UnaryRoute>;
  readonly streaming: Map<string, StreamRoute>;
}

export function routeTable(): RouteTable {
  return { unary: new Map(), streaming: new Map() };
}
