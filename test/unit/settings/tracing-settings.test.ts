/**
 * Which of TRACING_* and OTEL_* wins (docs/tracing.md): a TRACING_* setting that is set, then its OTEL_*
 * counterpart, then the reference's default; and bad values named by their variable.
 */
import { describe, expect, it } from 'vitest';
import type { SettingsError } from '../../../src/settings/settings.js';
import { loadSettings } from '../../../src/settings/settings.js';
import { tracingOptions } from '../../../src/settings/tracing-settings.js';

const options = (env: Record<string, string>) => tracingOptions(loadSettings(env).settings, 'redis');

describe('tracing settings', () => {
  it('defaults as the reference: OTLP/HTTP to localhost, service RateLimit, a random instance id, every trace sampled', () => {
    const o = options({ TRACING_ENABLED: 'true' });
    expect(o.protocol).toBe('http/protobuf');
    expect(o.url).toBe('http://localhost:4318/v1/traces');
    expect(o.resource['service.name']).toBe('RateLimit');
    expect(o.resource['service.instance.id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(o.resource['service.namespace']).toBeUndefined();
    expect(o.sampler).toEqual({ name: 'parentbased_traceidratio', ratio: 1 });
    expect(options({}).resource['service.instance.id']).not.toBe(o.resource['service.instance.id']);
  });

  it('reads the endpoint as the OTLP exporters do: /v1/traces added for HTTP, a signal URL as it is, host:port as http://', () => {
    expect(options({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318/' }).url).toBe('http://otel:4318/v1/traces');
    expect(options({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel:4317', TRACING_EXPORTER_PROTOCOL: 'grpc' }).url).toBe('http://otel:4317');
    expect(options({ TRACING_EXPORTER_PROTOCOL: 'grpc' }).url).toBe('http://localhost:4317');
    expect(options({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' }).url).toBe('https://b/custom');
  });

  it('lets TRACING_* win over OTEL_*, and OTEL_* over the defaults', () => {
    const both = options({
      TRACING_EXPORTER_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      TRACING_SERVICE_NAME: 'rl',
      OTEL_SERVICE_NAME: 'other',
      TRACING_SERVICE_NAMESPACE: 'edge',
      TRACING_SERVICE_INSTANCE_ID: 'pod-1',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=attr,service.namespace=ns,service.instance.id=i,deployment.environment=prod',
      TRACING_SAMPLING_RATE: '0.25',
      OTEL_TRACES_SAMPLER: 'always_on',
    });
    expect(both.protocol).toBe('grpc');
    expect(both.resource).toEqual({ 'service.name': 'rl', 'service.namespace': 'edge', 'service.instance.id': 'pod-1', 'deployment.environment': 'prod' });
    expect(both.sampler).toEqual({ name: 'parentbased_traceidratio', ratio: 0.25 });

    const otel = options({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc',
      OTEL_SERVICE_NAME: 'svc',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=attr,service.namespace=ns,service.instance.id=i',
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20a,x-team=edge',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20b',
    });
    expect(otel.protocol).toBe('grpc');
    expect(otel.resource).toEqual({ 'service.name': 'svc', 'service.namespace': 'ns', 'service.instance.id': 'i' });
    expect(otel.sampler).toEqual({ name: 'traceidratio', ratio: 0.1 });
    expect(otel.headers).toEqual({ authorization: 'Bearer b', 'x-team': 'edge' });
    expect(options({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=attr' }).resource['service.name']).toBe('attr');
  });

  it('names each bad value by its variable', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadSettings(env);
        return [];
      } catch (err) {
        return (err as SettingsError).problems;
      }
    };
    expect(problems({ TRACING_SAMPLING_RATE: '50' })).toEqual(["TRACING_SAMPLING_RATE: '50' is not a number from 0 to 1"]);
    expect(problems({ TRACING_EXPORTER_PROTOCOL: 'udp' })).toEqual(["TRACING_EXPORTER_PROTOCOL: 'udp' is not one of http, grpc"]);
    expect(problems({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual([
      "OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' is not supported: use http/protobuf or grpc",
    ]);
    expect(problems({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })[0]).toMatch(/^OTEL_TRACES_SAMPLER: 'jaeger_remote' is not one of always_on/);
    expect(problems({ OTEL_EXPORTER_OTLP_HEADERS: 'authorization' })).toEqual(["OTEL_EXPORTER_OTLP_HEADERS: 'authorization' is not key=value"]);
    expect(problems({ OTEL_RESOURCE_ATTRIBUTES: 'a=%zz' })).toEqual(["OTEL_RESOURCE_ATTRIBUTES: the value of 'a' is not valid percent-encoding"]);
    expect(problems({ OTEL_BSP_MAX_QUEUE_SIZE: '0' })).toEqual(["OTEL_BSP_MAX_QUEUE_SIZE: '0' is not a whole number from 1 to 2147483647"]);
  });
});
