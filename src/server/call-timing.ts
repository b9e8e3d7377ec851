/**
 * A grpc-js server interceptor that times every unary call at the gRPC layer:
 *
 * - duration: from the moment the call's headers arrived (queueing before the handler included) until its
 *   status was sent;
 * - late: the answer (or the error status) was handed to grpc-js after the caller's deadline (moved earlier
 *   by the time the call may have waited unseen before it was read, see loop-clock.ts); grpc-js writes
 *   it to the connection at once, unless it has already answered DEADLINE_EXCEEDED itself. (Not judged at
 *   write completion: a pause of this process between the write and its callback would count answers the
 *   client had in time.)
 * - send delay: from handing the answer to grpc-js until its write completed; it feeds the deadline margin.
 *
 * The hooks must not throw; they are called on the request path.
 */
import * as grpc from '@grpc/grpc-js';
import { CHECK_PATH } from './ext-authz-service.js';

export interface CallTimingHooks {
  /** A unary call finished with a status; seconds since its headers arrived. */
  readonly onFinished?: (method: string, seconds: number) => void;
  /** A unary call was answered after its deadline. */
  readonly onLate?: (method: string) => void;
  /** An answer took this long to be written, ms. */
  readonly onSendDelay?: (ms: number) => void;
  /** How long a call read now may have waited unseen before (LoopClock); its deadline is judged that much earlier. */
  readonly unseenWaitMs?: () => number;
}

function deadlineMs(call: grpc.ServerInterceptingCallInterface): number {
  const d = call.getDeadline();
  return d instanceof Date ? d.getTime() : d;
}

export function callTimingInterceptor(hooks: CallTimingHooks): grpc.ServerInterceptor {
  return (method, call) => {
    if (method.requestStream || method.responseStream) return new grpc.ServerInterceptingCall(call);
    const name = metricMethodName(method.path);
    const started = performance.now();
    const unseen = hooks.unseenWaitMs?.() ?? 0;
    let handedAt: number | undefined;
    let late = false;
    const checkLate = () => {
      if (!late && Date.now() > deadlineMs(call) - unseen) {
        late = true;
        hooks.onLate?.(name);
      }
    };
    return new grpc.ServerInterceptingCall(call, {
      sendMessage(message, next) {
        handedAt = performance.now();
        checkLate();
        next(message);
      },
      sendStatus(status, next) {
        const now = performance.now();
        if (handedAt === undefined) checkLate(); // an error status: handed over now
        if (handedAt !== undefined) hooks.onSendDelay?.(now - handedAt);
        hooks.onFinished?.(name, (now - started) / 1000);
        next(status);
      },
    });
  };
}

/** A call's name in metrics: the method, except ext_authz's Check, which would share `Check` with gRPC health: `ext_authz.Check`. */
export function metricMethodName(path: string): string {
  return path === CHECK_PATH ? 'ext_authz.Check' : path.slice(path.lastIndexOf('/') + 1);
}
