/**
 * A unary gRPC decision call inside its trace span (tracing on): the span ends with the status the call is
 * answered with, mapped as the transport maps it (grpc-errors.ts). A route that throws synchronously still does.
 */
import type { CallTrace } from '../../core/decision-trace.js';
import { toGrpcError } from './grpc-errors.js';
import { GrpcStatusError } from './lean/grpc-wire.js';

function statusOf(err: unknown): number {
  return err instanceof GrpcStatusError ? err.code : toGrpcError(err).code;
}

export function tracedCall<T>(trace: CallTrace, run: () => Promise<T>): Promise<T> {
  let pending: Promise<T>;
  try {
    pending = run();
  } catch (err) {
    trace.fail(statusOf(err), err);
    throw err;
  }
  return pending.then(
    (value) => {
      trace.end(0);
      return value;
    },
    (err: unknown) => {
      trace.fail(statusOf(err), err);
      throw err;
    },
  );
}
