/** What the OpenTelemetry tracer is built from (settings/tracing-settings.ts resolves it from TRACING_* and OTEL_*). */

export type SamplerName = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

export interface TracingOptions {
  readonly protocol: 'http/protobuf' | 'grpc';
  /** HTTP: the full URL spans are posted to (…/v1/traces); gRPC: the collector's address. */
  readonly url: string;
  /** HTTP headers, or gRPC metadata, of every export. */
  readonly headers: Readonly<Record<string, string>>;
  /** How long one export may take, ms. */
  readonly timeoutMs: number;
  /** The resource of every span: service.name, service.instance.id, service.namespace and OTEL_RESOURCE_ATTRIBUTES. */
  readonly resource: Readonly<Record<string, string>>;
  /** The sampler; `ratio` is read by the traceidratio ones. */
  readonly sampler: { readonly name: SamplerName; readonly ratio: number };
  /** The counter store (BACKEND), named on each span and its store call. */
  readonly store: string;
  /** Longest wait before a batch of spans is sent, ms. */
  readonly scheduleDelayMs: number;
  /** Spans kept while waiting for the collector; more are dropped. */
  readonly maxQueueSize: number;
}
