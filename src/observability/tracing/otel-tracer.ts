/**
 * OpenTelemetry tracing, loaded (with the SDK) only when TRACING_ENABLED is on. One tracer provider with a
 * parent-based sampler, a batch span processor bounded by OTEL_BSP_MAX_QUEUE_SIZE, and an OTLP exporter over
 * HTTP (protobuf) or gRPC. The caller's trace context is read from W3C `traceparent` or B3 (`b3`, `x-b3-*`)
 * headers. Nothing here is on the decision's path but the span's own bookkeeping: exports run in the background,
 * a collector that is down or slow costs dropped spans, logged once per outage (export-watch.ts).
 */
import { diag, DiagLogLevel, ROOT_CONTEXT, defaultTextMapGetter, type TextMapPropagator } from '@opentelemetry/api';
import { CompositePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { B3Propagator } from '@opentelemetry/propagator-b3';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { DecisionTracer } from '../../core/decision-trace.js';
import { CallSpan } from './call-span.js';
import { onceLog, WatchedExporter, type TracingLog } from './export-watch.js';
import type { TracingOptions } from './tracing-options.js';

export interface RunningTracing {
  readonly tracer: DecisionTracer;
  /** Sends the spans still queued (within the export timeout), then stops. */
  shutdown(): Promise<void>;
}

function sampler({ name, ratio }: TracingOptions['sampler']): Sampler {
  const ratioSampler = new TraceIdRatioBasedSampler(ratio);
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratioSampler;
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratioSampler });
  }
}

async function exporter(options: TracingOptions): Promise<SpanExporter> {
  const common = { url: options.url, timeoutMillis: options.timeoutMs };
  if (options.protocol === 'grpc') {
    const [{ OTLPTraceExporter }, { Metadata }] = await Promise.all([import('@opentelemetry/exporter-trace-otlp-grpc'), import('@grpc/grpc-js')]);
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(options.headers)) metadata.set(k, v);
    return new OTLPTraceExporter({ ...common, metadata });
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ ...common, headers: { ...options.headers } });
}

export async function startTracing(options: TracingOptions, log: TracingLog): Promise<RunningTracing> {
  // The SDK's own warnings (a full queue, a failed export) go to our log, at most once a minute.
  diag.setLogger(onceLog(log), DiagLogLevel.WARN);
  const watched = new WatchedExporter(await exporter(options), options, log);
  const provider = new TracerProvider({
    sampler: sampler(options.sampler),
    resource: defaultResource().merge(resourceFromAttributes(options.resource)),
    spanLimits: { attributeValueLengthLimit: 1024, attributeCountLimit: 32, eventCountLimit: 8 },
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: watched,
        maxQueueSize: options.maxQueueSize,
        maxExportBatchSize: Math.min(512, options.maxQueueSize),
        scheduledDelayMillis: options.scheduleDelayMs,
        exportTimeoutMillis: options.timeoutMs,
      }),
    ],
  });
  const tracer = provider.getTracer('ratelimit-sidecar');
  const propagator: TextMapPropagator = new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new B3Propagator()] });
  const store = options.store;
  return {
    tracer: {
      start(call, headers) {
        const parent = headers === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
        return CallSpan.start(tracer, call, parent, store);
      },
    },
    async shutdown() {
      await provider.shutdown().catch(() => {});
      diag.disable();
    },
  };
}
