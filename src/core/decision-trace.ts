/**
 * The trace of one decision call, as the engine and the services report it when tracing is on (TRACING_ENABLED;
 * observability/tracing/ holds the OpenTelemetry side). With tracing off no DecisionTracer exists and the decision
 * path makes no call here. Every method is synchronous, cheap and never throws: a trace must never delay or fail
 * a decision.
 */
import type { Code } from '../vocab/types.js';

/** Request headers as node:http and node:http2 give them (lower-case names), carrying the caller's trace context. */
export type TraceCarrier = Readonly<Record<string, string | string[] | undefined>>;

/** What the engine reports about the decision it makes inside a traced call. */
export interface DecisionTrace {
  /** The request as the engine reads it. */
  request(domain: string, descriptors: number): void;
  /**
   * One call to the counter store: `checks` limit checks, started at `startedMs` (performance.now()) and ended
   * now; `failed` is what it threw, if it did.
   */
  store(checks: number, startedMs: number, failed?: unknown): void;
  /** A descriptor over one of its limits: its rule's stats key; `enforced` false for shadow and quota mode. */
  overLimit(statsKey: string, enforced: boolean): void;
  /** The decision's overall code; `storeFailure` when FAILURE_MODE answered for a store that could not. */
  decided(code: Code, storeFailure: boolean): void;
}

/** The span of one call: what the engine reports, and how the call ended. */
export interface CallTrace extends DecisionTrace {
  /** ext_authz: how the Check ended (allowed, over_limit, unknown_domain, no_descriptors, store_failure). */
  result(result: string): void;
  /** Ends the call answered; `status` is the protocol's (the HTTP status of /json, 0 = gRPC OK). */
  end(status: number): void;
  /** Ends the call with an error: `status` the gRPC or HTTP status it was answered with, `err` its cause. */
  fail(status: number, err: unknown): void;
}

export type TracedCall = 'ShouldRateLimit' | 'Check' | 'json';

export interface DecisionTracer {
  /** Starts the span of one call under the trace context in `headers` (W3C traceparent or B3), sampled or not. */
  start(call: TracedCall, headers: TraceCarrier | undefined): CallTrace;
}

/** `pending`, the store call started at `startedMs`, reported to `trace` when it settles. */
export function traceStore<T>(trace: DecisionTrace, checks: number, startedMs: number, pending: Promise<T>): Promise<T> {
  return pending.then(
    (value) => {
      trace.store(checks, startedMs);
      return value;
    },
    (err: unknown) => {
      trace.store(checks, startedMs, err);
      throw err;
    },
  );
}
