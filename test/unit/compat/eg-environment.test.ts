/**
 * The environment Envoy Gateway writes for its rate-limit container (test/support/eg-environment.ts, with its
 * Redis TLS and its tracing added as resource.go adds them), read by our settings loader verbatim: no error, and
 * each name with the reference's meaning. test/envoy/eg-environment.test.ts starts the service with it.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/settings/settings.js';
import { EG_VERSION, egEnvironment } from '../../support/eg-environment.js';

const EG_ENV = egEnvironment();
const TRACING_ENV = {
  TRACING_ENABLED: 'true',
  TRACING_SERVICE_NAME: 'envoy-ratelimit',
  TRACING_SERVICE_NAMESPACE: 'envoy-gateway-system',
  TRACING_SERVICE_INSTANCE_ID: 'envoy-ratelimit-6d8f9c7b5-x2x7q',
  TRACING_SAMPLING_RATE: '1.0',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.monitoring.svc.cluster.local:4318',
};
const REDIS_TLS_ENV = { REDIS_TLS: 'true', REDIS_TLS_CLIENT_CERT: '/redis-certs/tls.crt', REDIS_TLS_CLIENT_KEY: '/redis-certs/tls.key' };

describe(`Envoy Gateway's rate-limit environment (${EG_VERSION})`, () => {
  it('loads, with xDS over mutual TLS, gRPC TLS without client certificates (GRPC_SERVER_TLS_CA_CERT ignored, as the reference ignores it) and Redis', () => {
    const { settings } = loadSettings(EG_ENV);
    expect(settings).toMatchObject({
      configType: 'GRPC_XDS_SOTW',
      xdsServerUrl: 'envoy-gateway:18001',
      xdsNodeId: 'envoy-ratelimit',
      xdsServerUseTls: true,
      xdsClientTlsCert: '/certs/tls.crt',
      xdsClientTlsKey: '/certs/tls.key',
      xdsServerTlsCaCert: '/certs/ca.crt',
      forceStartWithoutInitialConfig: true,
      grpcTlsCert: '/certs/tls.crt',
      grpcTlsKey: '/certs/tls.key',
      grpcTlsClientCa: '',
      backend: 'redis',
      redisUrl: 'redis://redis.redis-system.svc.cluster.local:6379',
      usePrometheus: true,
      prometheusAddr: ':19001',
    });
  });

  it('with its tracing settings: loads', () => {
    expect(() => loadSettings({ ...EG_ENV, ...TRACING_ENV })).not.toThrow();
  });

  it('with its Redis TLS settings: rediss:// and the client certificate', () => {
    const { settings } = loadSettings({ ...EG_ENV, ...REDIS_TLS_ENV });
    expect(settings).toMatchObject({
      redisUrl: 'rediss://redis.redis-system.svc.cluster.local:6379',
      redisTlsCert: '/redis-certs/tls.crt',
      redisTlsKey: '/redis-certs/tls.key',
    });
  });
});
