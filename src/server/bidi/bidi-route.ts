/**
 * A bidirectional-streaming method, served the same way on both transports (lean: bidi-lean.ts, grpc-js:
 * bidi-grpc-js.ts): the route is called once per call with the call's sending half and returns what to do with
 * each message the client sends, with the client's half-close, and with the end of the call.
 */

export interface BidiCall {
  /** Sends one message (ignored once the call is over). */
  write(message: Uint8Array): void;
  /** Ends the call with a status (default OK); `details` is the status message. */
  end(code?: number, details?: string): void;
  /** The connection the call rides on: calls on one connection share it (for per-connection bounds). */
  readonly connection: object | string;
  /** The client's address, for logs and the debug view. */
  readonly peer: string;
}

export interface BidiHandlers {
  /** One whole message from the client (framing, size limit and compression were checked). */
  message(bytes: Buffer): void;
  /** The client half-closed its side. */
  halfClose(): void;
  /** The call is over, whatever the reason (ended by the route, cancelled, reset, connection lost). Called once. */
  closed(): void;
}

export type BidiRoute = (call: BidiCall) => BidiHandlers;
