/**
 * nghttp2, under node:http2, has a rapid-reset bound of its own: a connection whose peer resets more than
 * `streamResetBurst` streams (default 1,000, then `streamResetRate` 33 a second) is ended with GOAWAY
 * INTERNAL_ERROR, calls in flight included. Behind Envoy that peer is Envoy, cancelling the rate-limit call of
 * every request whose client went away: the bound would cut Envoy off (its calls fail, and with
 * `failure_mode_deny: false` pass unlimited) whenever its clients cancel faster than 33 requests a second.
 * The gRPC port's server (lean/lean-server.ts) takes the bound out of the way; the connection guard
 * (connection-guard.ts) decides instead: it retires only a connection that resets streams without ever carrying a
 * call.
 */
import type * as http2 from 'node:http2';

/** nghttp2's bucket at its largest (uint32): never spent. Both must be set for either to apply. */
export const NGHTTP2_RESET_BOUND = { streamResetBurst: 0xffff_ffff, streamResetRate: 0xffff_ffff } as const satisfies http2.ServerOptions;
