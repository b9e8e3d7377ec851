/**
 * gRPC-over-HTTP/2 facts the lean transport needs (grpc/grpc PROTOCOL-HTTP2.md): status codes, the
 * `grpc-timeout` header, the percent-encoding of `grpc-message`, and the 5-byte message prefix.
 */

export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A gRPC status with its message, thrown by a route to answer with it. */
export class GrpcStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * The longest deadline the gRPC port keeps, ms: a timer past 2^31 − 1 ms fires at once (Node). A whole number
 * of seconds (`2147483S`).
 */
export const MAX_GRPC_TIMEOUT_MS = 2_147_483_000;

/**
 * `grpc-timeout` → milliseconds, clamped to MAX_GRPC_TIMEOUT_MS; undefined when absent; NaN when malformed.
 * Well formed is exactly what PROTOCOL-HTTP2.md says: 1 to 8 ASCII digits and one unit of H M S m u n, nothing
 * else (no sign, fraction, space or 9th digit). A malformed one is answered INTERNAL, as grpc-go and grpc-js
 * do.
 */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = Array.isArray(value) ? value[0]! : value;
  const n = v.length;
  if (n < 2 || n > 9) return Number.NaN;
  const unit = TIMEOUT_UNIT_MS[v[n - 1]!];
  if (unit === undefined) return Number.NaN;
  let digits = 0;
  for (let i = 0; i < n - 1; i++) {
    const c = v.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return Number.NaN;
    digits = digits * 10 + c;
  }
  return Math.min(digits * unit, MAX_GRPC_TIMEOUT_MS);
}

/** The status message for a malformed `grpc-timeout`. */
export function malformedTimeoutMessage(value: unknown): string {
  return `malformed grpc-timeout '${String(value)}': want 1 to 8 digits and a unit (H, M, S, m, u, n)`;
}

/**
 * `grpc-message` encoding: bytes of the UTF-8 text outside printable ASCII (0x20–0x7E), and '%' itself,
 * become %XX.
 */
export function encodeGrpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = '';
  for (const b of Buffer.from(text, 'utf8')) {
    out += b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b);
  }
  return out;
}

/** A message framed for the wire: flag 0 (not compressed), 4-byte big-endian length, the bytes. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}
