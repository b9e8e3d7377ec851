/**
 * A bidirectional-streaming method, served by the lean transport (bidi-lean.ts): the route is called once per
 * call with the call's sending half and returns what to do with each message the client sends, with the
 * client's half-close, and with the end of the call.
 */

/**
 * Answers a client may leave unread (HTTP/2 flow control holds them here) before its call is ended
 * RESOURCE_EXHAUSTED, bytes.
 */
export const MAX_UNREAD_BYTES = 1 << 20;
export const NOT_READING = 'the client is not reading its answers';

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

/**
 * `maxMessageBytes`: the largest message a client may send on this method (default: the port's bound);
 * `maxUnreadBytes`: what it may leave unread on the lean transport (default MAX_UNREAD_BYTES), to be set above
 * the method's largest answer.
 */
export type BidiRoute = ((call: BidiCall) => BidiHandlers) & { readonly maxMessageBytes?: number; readonly maxUnreadBytes?: number };
