/**
 * The settings of OpenTelemetry tracing: envoyproxy/ratelimit's names (TRACING_*) and the standard OTEL_* ones.
 * Spread into SETTINGS (settings.ts); tracingOptions() decides which wins where both are set, and docs/tracing.md
 * tells it: a TRACING_* setting that is set wins over its OTEL_* counterpart, then the OTEL_* one, then the
 * reference's default.
 */
import { randomUUID } from 'node:crypto';
import type { Spec } from './xds-settings.js';
import type { SamplerName, TracingOptions } from '../observability/tracing/tracing-options.js';

function spec<T>(env: string, type: string, def: T, description: string, parse: (raw: string) => T): Spec<T> {
  return { env, type, default: def, description, parse };
}

const str = (env: string, description: string) => spec(env, 'string', '', description, (s) => s.trim());

/** `key=value,key2=value2`, values percent-encoded (W3C baggage form, as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS have it). */
export function parsePairs(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of raw.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`'${part.trim()}' is not key=value`);
    const key = part.slice(0, eq).trim();
    let value: string;
    try {
      value = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      throw new Error(`the value of '${key}' is not valid percent-encoding`);
    }
    out[key] = value;
  }
  return out;
}

const pairs = (env: string, description: string) =>
  spec(env, 'key=value,...', '', description, (s) => {
    parsePairs(s);
    return s.trim();
  });

function ratio(raw: string): number {
  const n = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new Error(`'${raw}' is not a number from 0 to 1`);
  return n;
}

function wholeMs(raw: string): number {
  const v = raw.trim();
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 2 ** 31 - 1) throw new Error(`'${raw}' is not a whole number from 1 to 2147483647`);
  return Number(v);
}

type Protocol = TracingOptions['protocol'];
function otlpProtocol(raw: string): Protocol | '' {
  const v = raw.trim().toLowerCase();
  if (v === '' || v === 'http/protobuf' || v === 'grpc') return v;
  if (v === 'http/json') throw new Error(`'${raw}' is not supported: use http/protobuf or grpc`);
  throw new Error(`'${raw}' is not one of http/protobuf, grpc`);
}

const SAMPLERS: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export const TRACING_SETTINGS = {
  tracingEnabled: spec(
    'TRACING_ENABLED',
    'true | false',
    false,
    'Send OpenTelemetry spans of each decision call (ShouldRateLimit, ext_authz Check, POST /json) over OTLP (docs/tracing.md).',
    (s) => {
      const v = s.trim().toLowerCase();
      if (['true', '1', 'yes', 'on', 't'].includes(v)) return true;
      if (['false', '0', 'no', 'off', 'f', ''].includes(v)) return false;
      throw new Error(`'${s}' is not a boolean (true or false)`);
    },
  ),
  tracingServiceName: str(
    'TRACING_SERVICE_NAME',
    "The spans' `service.name`; unset: OTEL_SERVICE_NAME, then `service.name` of OTEL_RESOURCE_ATTRIBUTES, then `RateLimit`.",
  ),
  tracingServiceNamespace: str(
    'TRACING_SERVICE_NAMESPACE',
    "The spans' `service.namespace`; unset: `service.namespace` of OTEL_RESOURCE_ATTRIBUTES, else none.",
  ),
  tracingServiceInstanceId: str(
    'TRACING_SERVICE_INSTANCE_ID',
    "The spans' `service.instance.id` (Envoy Gateway sets the pod's name); unset: `service.instance.id` of OTEL_RESOURCE_ATTRIBUTES, else a random UUID per process.",
  ),
  tracingExporterProtocol: spec<'' | 'http' | 'grpc'>(
    'TRACING_EXPORTER_PROTOCOL',
    'http \\| grpc',
    '',
    'OTLP over HTTP (protobuf) or gRPC; unset: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, then http.',
    (s) => {
      const v = s.trim().toLowerCase();
      if (v === '' || v === 'http' || v === 'grpc') return v;
      throw new Error(`'${s}' is not one of http, grpc`);
    },
  ),
  tracingSamplingRate: spec<number | undefined>(
    'TRACING_SAMPLING_RATE',
    'number 0–1',
    undefined,
    'Share of calls traced when Envoy sent no sampling decision (parent-based: a sampled parent is always followed, an unsampled one never); unset: OTEL_TRACES_SAMPLER, then 1.',
    ratio,
  ),
  otelExporterOtlpEndpoint: str(
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'The collector: `http://host:4318` (HTTP, `/v1/traces` is added) or `http://host:4317` (gRPC); `host:port` means `http://host:port`. Default: localhost, 4318 or 4317.',
  ),
  otelExporterOtlpTracesEndpoint: str(
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    "The collector's full URL for spans (HTTP: used as it is); wins over OTEL_EXPORTER_OTLP_ENDPOINT.",
  ),
  otelExporterOtlpProtocol: spec<Protocol | ''>(
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'http/protobuf \\| grpc',
    '',
    'OTLP transport when TRACING_EXPORTER_PROTOCOL is unset.',
    otlpProtocol,
  ),
  otelExporterOtlpTracesProtocol: spec<Protocol | ''>(
    'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
    'http/protobuf \\| grpc',
    '',
    'As OTEL_EXPORTER_OTLP_PROTOCOL, for spans; wins over it.',
    otlpProtocol,
  ),
  otelExporterOtlpHeaders: pairs('OTEL_EXPORTER_OTLP_HEADERS', 'Headers (HTTP) or metadata (gRPC) sent with every export, e.g. `authorization=Bearer%20xyz`.'),
  otelExporterOtlpTracesHeaders: pairs('OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'As OTEL_EXPORTER_OTLP_HEADERS, for spans; a key set in both takes this value.'),
  otelExporterOtlpTimeout: spec(
    'OTEL_EXPORTER_OTLP_TIMEOUT',
    'integer ≥ 1 (ms)',
    10_000,
    'How long one export may take before its spans are dropped, ms.',
    wholeMs,
  ),
  otelServiceName: str('OTEL_SERVICE_NAME', "The spans' `service.name` when TRACING_SERVICE_NAME is unset."),
  otelResourceAttributes: pairs('OTEL_RESOURCE_ATTRIBUTES', 'Extra resource attributes of every span, e.g. `deployment.environment=prod,k8s.pod.name=rl-0`.'),
  otelTracesSampler: spec<SamplerName | ''>(
    'OTEL_TRACES_SAMPLER',
    SAMPLERS.join(' \\| '),
    '',
    'The sampler when TRACING_SAMPLING_RATE is unset (with OTEL_TRACES_SAMPLER_ARG).',
    (s) => {
      const v = s.trim().toLowerCase();
      if (v !== '' && !(SAMPLERS as readonly string[]).includes(v)) throw new Error(`'${s}' is not one of ${SAMPLERS.join(', ')}`);
      return v as SamplerName | '';
    },
  ),
  otelBspScheduleDelay: spec(
    'OTEL_BSP_SCHEDULE_DELAY',
    'integer ≥ 1 (ms)',
    5_000,
    'Longest wait before a batch of spans is sent, ms (a batch of 512 goes at once).',
    wholeMs,
  ),
  otelBspMaxQueueSize: spec(
    'OTEL_BSP_MAX_QUEUE_SIZE',
    'integer ≥ 1',
    2_048,
    'Spans kept while the collector is slow or away; beyond it new spans are dropped (and logged once).',
    wholeMs,
  ),
  otelTracesSamplerArg: spec<number | undefined>(
    'OTEL_TRACES_SAMPLER_ARG',
    'number 0–1',
    undefined,
    'The ratio of the traceidratio samplers (default 1).',
    ratio,
  ),
} as const;

type TracingSettingName = keyof typeof TRACING_SETTINGS;
type TracingSettings = { readonly [K in TracingSettingName]: (typeof TRACING_SETTINGS)[K]['default'] };

function withScheme(endpoint: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint) ? endpoint : `http://${endpoint}`;
}

/** What the tracer is built from: each value from the first of its sources that is set (see the module's comment). */
export function tracingOptions(s: TracingSettings, store: string): TracingOptions {
  const protocol: Protocol =
    s.tracingExporterProtocol === 'grpc'
      ? 'grpc'
      : s.tracingExporterProtocol === 'http'
        ? 'http/protobuf'
        : s.otelExporterOtlpTracesProtocol || s.otelExporterOtlpProtocol || 'http/protobuf';
  const base = s.otelExporterOtlpEndpoint === '' ? `http://localhost:${protocol === 'grpc' ? 4317 : 4318}` : withScheme(s.otelExporterOtlpEndpoint);
  const url =
    s.otelExporterOtlpTracesEndpoint !== ''
      ? withScheme(s.otelExporterOtlpTracesEndpoint)
      : protocol === 'grpc'
        ? base
        : `${base.replace(/\/+$/, '')}/v1/traces`;
  const attributes = parsePairs(s.otelResourceAttributes);
  const resource: Record<string, string> = {
    ...attributes,
    'service.name': s.tracingServiceName || s.otelServiceName || attributes['service.name'] || 'RateLimit',
    'service.instance.id': s.tracingServiceInstanceId || attributes['service.instance.id'] || randomUUID(),
  };
  const namespace = s.tracingServiceNamespace || attributes['service.namespace'];
  if (namespace) resource['service.namespace'] = namespace;
  const sampler: TracingOptions['sampler'] =
    s.tracingSamplingRate !== undefined
      ? { name: 'parentbased_traceidratio', ratio: s.tracingSamplingRate }
      : { name: s.otelTracesSampler || 'parentbased_traceidratio', ratio: s.otelTracesSamplerArg ?? 1 };
  return {
    protocol,
    url,
    headers: { ...parsePairs(s.otelExporterOtlpHeaders), ...parsePairs(s.otelExporterOtlpTracesHeaders) },
    timeoutMs: s.otelExporterOtlpTimeout,
    scheduleDelayMs: s.otelBspScheduleDelay,
    maxQueueSize: s.otelBspMaxQueueSize,
    resource,
    sampler,
    store,
  };
}
