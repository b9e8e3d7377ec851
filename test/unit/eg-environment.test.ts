/**
 * The environment Envoy Gateway writes for its rate-limit container (internal/infrastructure/kubernetes/ratelimit/
 * resource.go in envoyproxy/gateway: expectedRateLimitContainerEnv, Redis TLS included), read by our settings
 * loader: no error, and each name with the reference's meaning.
 */
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/settings.js';

const EG_ENV: Record<string, string> = {
  REDIS_SOCKET_TYPE: 'tcp',
  REDIS_URL: 'redis.redis-system.svc.cluster.local:6379',
  RUNTIME_ROOT: '/data',
  RUNTIME_SUBDIRECTORY: 'ratelimit',
  RUNTIME_IGNOREDOTFILES: 'true',
  RUNTIME_WATCH_ROOT: 'false',
  LOG_LEVEL: 'info',
  USE_STATSD: 'false',
  CONFIG_TYPE: 'GRPC_XDS_SOTW',
  CONFIG_GRPC_XDS_SERVER_URL: 'envoy-gateway:18001',
  CONFIG_GRPC_XDS_NODE_ID: 'envoy-ratelimit',
  GRPC_SERVER_USE_TLS: 'true',
  GRPC_SERVER_TLS_CERT: '/certs/tls.crt',
  GRPC_SERVER_TLS_KEY: '/certs/tls.key',
  GRPC_SERVER_TLS_CA_CERT: '/certs/ca.crt',
  CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true',
  CONFIG_GRPC_XDS_CLIENT_TLS_CERT: '/certs/tls.crt',
  CONFIG_GRPC_XDS_CLIENT_TLS_KEY: '/certs/tls.key',
  CONFIG_GRPC_XDS_SERVER_TLS_CACERT: '/certs/ca.crt',
  FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
};
const REDIS_TLS_ENV = { REDIS_TLS: 'true', REDIS_TLS_CLIENT_CERT: '/redis-certs/tls.crt', REDIS_TLS_CLIENT_KEY: '/redis-certs/tls.key' };

describe("Envoy Gateway's rate-limit environment", () => {
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
      usePrometheus: false,
    });
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
