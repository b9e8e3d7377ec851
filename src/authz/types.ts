/**
 * What the ext_authz Check service needs from a CheckRequest, protocol-free: the server decodes the wire
 * message into this (server/ext-authz/ext-authz-decode.ts), and the answer it gets back (CheckAnswer) is encoded
 * by server/ext-authz/ext-authz-encode.ts, so any transport (grpc-js, a lean HTTP/2 server) shares both halves.
 */

export interface HttpAttributes {
  readonly id: string;
  readonly method: string;
  /** The request target as Envoy sends it: path and query string, not decoded. */
  readonly path: string;
  readonly host: string;
  readonly scheme: string;
  readonly protocol: string;
  /**
   * Lowercased names. From `headers` (Envoy joins repeated headers with ',') or, when Envoy sends
   * `header_map` (encode_raw_headers), the first value of each name.
   */
  readonly headers: ReadonlyMap<string, string>;
}

export interface CheckAttributes {
  /** The client address (attributes.source.address.socket_address.address); undefined when not an IP socket (a pipe, or unset). */
  readonly sourceAddress?: string;
  readonly http: HttpAttributes;
  /** The route's per-route CheckSettings.context_extensions. */
  readonly contextExtensions: ReadonlyMap<string, string>;
}

/** One header of an answer, with Envoy's append semantics made explicit. */
export interface AnswerHeader {
  readonly key: string;
  readonly value: string;
  /** true: add another value; false: replace any existing value (the first of each name in an answer). */
  readonly append: boolean;
}

/**
 * A Check answer. `code` is the google.rpc.Status code: 0 allows the request; anything else denies it
 * with `denied` (status, headers and body of Envoy's local reply).
 */
export type CheckAnswer =
  | {
      readonly code: 0;
      readonly message: string;
      /** Headers added to the upstream request (the `degrade` headers). */
      readonly requestHeaders: readonly AnswerHeader[];
      /** Headers added to the downstream response (RateLimit headers). */
      readonly responseHeaders: readonly AnswerHeader[];
    }
  | {
      readonly code: number;
      readonly message: string;
      readonly denied: { readonly status: number; readonly headers: readonly AnswerHeader[]; readonly body: string };
    };

/** Looks up a client address's region (ISO country code), e.g. in a MaxMind database; undefined when unknown. */
export type RegionLookup = (ip: string) => string | undefined;
