/**
 * The span of one decision call (core/decision-trace.ts CallTrace) on an OpenTelemetry span. Names and attributes
 * follow envoyproxy/ratelimit where they fit: the call's span is named by its gRPC method (as otelgrpc names it),
 * `domain` is the request's domain, and the counter store's call is a child span named `Redis Pipeline Execution`.
 * Its `ratelimit.checks` counts the limits checked in that one call (the reference's `pipeline length` counts its
 * Redis commands, two per limit). An unsampled span records nothing: every method returns at once.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { CallTrace, TracedCall } from '../../core/decision-trace.js';
import type { Code } from '../../vocab/types.js';

/** Rules listed on one span at most (a request has few descriptors; the list is bounded all the same). */
const MAX_RULES = 16;

export const CALL_SPANS: Readonly<Record<TracedCall, { readonly name: string; readonly attributes: Attributes }>> = {
  ShouldRateLimit: {
    name: 'envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
    attributes: { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService', 'rpc.method': 'ShouldRateLimit' },
  },
  Check: {
    name: 'envoy.service.auth.v3.Authorization/Check',
    attributes: { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.auth.v3.Authorization', 'rpc.method': 'Check' },
  },
  json: { name: 'POST /json', attributes: { 'http.request.method': 'POST', 'url.path': '/json' } },
};

export class CallSpan implements CallTrace {
  private overLimitRules: string[] | undefined;
  private shadowRules: string[] | undefined;

  constructor(
    private readonly span: Span,
    private readonly tracer: Tracer,
    private readonly grpc: boolean,
    private readonly storeName: string,
  ) {}

  static start(tracer: Tracer, call: TracedCall, parent: typeof ROOT_CONTEXT, store: string): CallSpan {
    const { name, attributes } = CALL_SPANS[call];
    const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: { ...attributes, 'ratelimit.store': store } }, parent);
    return new CallSpan(span, tracer, call !== 'json', store);
  }

  request(domain: string, descriptors: number): void {
    if (!this.span.isRecording()) return;
    this.span.setAttribute('domain', domain);
    this.span.setAttribute('ratelimit.descriptors', descriptors);
  }

  store(checks: number, startedMs: number, failed?: unknown): void {
    if (!this.span.isRecording()) return;
    const redis = this.storeName === 'redis';
    const child = this.tracer.startSpan(
      redis ? 'Redis Pipeline Execution' : 'Memory Store Execution',
      {
        kind: redis ? SpanKind.CLIENT : SpanKind.INTERNAL,
        startTime: startedMs,
        attributes: redis ? { 'ratelimit.checks': checks, 'db.system.name': 'redis' } : { 'ratelimit.checks': checks },
      },
      trace.setSpan(ROOT_CONTEXT, this.span),
    );
    if (failed !== undefined) markError(child, failed);
    child.end();
  }

  overLimit(statsKey: string, enforced: boolean): void {
    if (!this.span.isRecording()) return;
    const list = enforced ? (this.overLimitRules ??= []) : (this.shadowRules ??= []);
    if (list.length < MAX_RULES) list.push(statsKey);
  }

  decided(code: Code, storeFailure: boolean): void {
    if (!this.span.isRecording()) return;
    this.span.setAttribute('ratelimit.overall_code', code);
    if (this.overLimitRules !== undefined) this.span.setAttribute('ratelimit.over_limit.rules', this.overLimitRules);
    if (this.shadowRules !== undefined) this.span.setAttribute('ratelimit.shadow.rules', this.shadowRules);
    if (storeFailure) this.span.setAttribute('ratelimit.failure_mode', true);
  }

  result(result: string): void {
    if (this.span.isRecording()) this.span.setAttribute('ratelimit.authz.result', result);
  }

  end(status: number): void {
    if (this.span.isRecording()) this.span.setAttribute(this.grpc ? 'rpc.grpc.status_code' : 'http.response.status_code', status);
    this.span.end();
  }

  fail(status: number, err: unknown): void {
    if (this.span.isRecording()) {
      this.span.setAttribute(this.grpc ? 'rpc.grpc.status_code' : 'http.response.status_code', status);
      markError(this.span, err);
    }
    this.span.end();
  }
}

function markError(span: Span, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.recordException(err instanceof Error ? err : message);
}
