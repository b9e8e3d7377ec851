/**
 * The client's coded errors. Callers tell them apart by `code`, never by message text.
 * - CAPACITY_NO_MASTER: the server answered that it is not the master and named none (election under way).
 * - CAPACITY_REDIRECT_LOOP: more mastership redirects in one call than allowed.
 * - CAPACITY_UNAVAILABLE: the server could not be reached or failed the call (the gRPC error is the cause).
 * - LIMITER_TIMEOUT / LIMITER_ABORTED / LIMITER_QUEUE_FULL: a limiter wait that was bounded and ended unserved.
 * - CLIENT_CLOSED: the client (or the resource) was closed while the call waited.
 */
export type CapacityErrorCode =
  'CAPACITY_NO_MASTER' | 'CAPACITY_REDIRECT_LOOP' | 'CAPACITY_UNAVAILABLE' | 'LIMITER_TIMEOUT' | 'LIMITER_ABORTED' | 'LIMITER_QUEUE_FULL' | 'CLIENT_CLOSED';

export class CapacityError extends Error {
  constructor(
    readonly code: CapacityErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CapacityError';
  }
}
