/**
 * The closed catalogue of errors the service returns. Each has a code that the server maps to a gRPC
 * status in one place (server/grpc/grpc-errors.ts): bad requests → INVALID_ARGUMENT, store failures → UNAVAILABLE
 * (so Envoy's failure_mode_deny decides), requests over a size limit → RESOURCE_EXHAUSTED. Over limit is a
 * result, never an error.
 */
export type ErrorCode = 'INVALID_REQUEST' | 'REQUEST_TOO_LARGE' | 'STORE_UNAVAILABLE' | 'STORE_TIMEOUT' | 'INTERNAL';

export class RateLimitError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RateLimitError';
  }
}

export class InvalidRequestError extends RateLimitError {
  constructor(message: string) {
    super('INVALID_REQUEST', message);
    this.name = 'InvalidRequestError';
  }
}

/** A well-formed request beyond one of the request limits (vocab/request-limits.ts). */
export class RequestTooLargeError extends RateLimitError {
  constructor(message: string) {
    super('REQUEST_TOO_LARGE', message);
    this.name = 'RequestTooLargeError';
  }
}

/** The counter store could not answer (unreachable, or slower than the deadline). */
export class StoreError extends RateLimitError {
  constructor(code: 'STORE_UNAVAILABLE' | 'STORE_TIMEOUT', message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'StoreError';
  }
}
