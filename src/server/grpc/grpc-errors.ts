/** The one place where errors become gRPC statuses. */
import { status as Status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { RateLimitError } from '../../vocab/errors.js';

export function toGrpcError(err: unknown): Partial<ServiceError> & { code: Status; details: string } {
  if (err instanceof RateLimitError) {
    switch (err.code) {
      case 'INVALID_REQUEST':
        return { code: Status.INVALID_ARGUMENT, details: err.message, metadata: new Metadata() };
      case 'REQUEST_TOO_LARGE':
        return { code: Status.RESOURCE_EXHAUSTED, details: err.message, metadata: new Metadata() };
      case 'STORE_UNAVAILABLE':
      case 'STORE_TIMEOUT':
        // UNAVAILABLE lets Envoy's failure_mode_deny decide.
        return { code: Status.UNAVAILABLE, details: err.message, metadata: new Metadata() };
      case 'INTERNAL':
        break;
    }
  }
  return { code: Status.INTERNAL, details: err instanceof Error ? err.message : String(err), metadata: new Metadata() };
}
