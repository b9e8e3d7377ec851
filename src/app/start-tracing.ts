/**
 * Start phase, first of the servers': OpenTelemetry tracing when TRACING_ENABLED is on. The SDK is imported here,
 * and only then: with tracing off no module of it is loaded and the decision path makes no tracing call. The
 * tracer closes after the servers (teardown is newest first), so the last calls' spans are sent.
 */
import type { DecisionTracer } from '../core/decision-trace.js';
import { componentLogger } from '../observability/log.js';
import { tracingOptions } from '../settings/tracing-settings.js';
import type { StartContext } from './start-context.js';

const EXPORTER_SETTINGS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'TRACING_EXPORTER_PROTOCOL'] as const;

export async function startTracing({ settings, log, teardown }: StartContext): Promise<DecisionTracer | undefined> {
  if (!settings.tracingEnabled) {
    const set = EXPORTER_SETTINGS.filter((env) =>
      env === 'TRACING_EXPORTER_PROTOCOL'
        ? settings.tracingExporterProtocol !== ''
        : (env === 'OTEL_EXPORTER_OTLP_ENDPOINT' ? settings.otelExporterOtlpEndpoint : settings.otelExporterOtlpTracesEndpoint) !== '',
    );
    if (set.length > 0) log.warn(`${set.join(', ')} set but TRACING_ENABLED is not true: no spans are sent`);
    return undefined;
  }
  const options = tracingOptions(settings, settings.backend);
  const { startTracing: startOtel } = await import('../observability/tracing/otel-tracer.js');
  const running = await startOtel(options, componentLogger(log, 'tracing'));
  teardown.defer('tracing', () => running.shutdown());
  log.info('tracing on', {
    protocol: options.protocol,
    collector: options.url,
    headers: Object.keys(options.headers),
    sampler: options.sampler.name,
    ratio: options.sampler.ratio,
    resource: options.resource,
  });
  return running.tracer;
}
