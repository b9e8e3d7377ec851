/**
 * The environment Envoy Gateway gives its rate-limit container: envoyproxy/gateway v1.9.0,
 * internal/infrastructure/kubernetes/ratelimit/resource.go (expectedRateLimitContainerEnv), with a Redis backend
 * and its rate-limit Prometheus telemetry on (the default). Its values as written there; a test that starts the
 * service moves the files under `root` and gives its own addresses.
 */
import { join } from 'node:path';

export const EG_VERSION = 'v1.9.0';

export interface EgPlaces {
  /** Where /certs, /data and /etc/statsd-exporter are (default `/`, as in the pod). */
  readonly root?: string;
  readonly xds?: string;
  readonly redis?: string;
  readonly prometheusAddr?: string;
}

export function egEnvironment(o: EgPlaces = {}): Record<string, string> {
  const at = (path: string) => join(o.root ?? '/', path);
  return {
    RUNTIME_ROOT: at('data'),
    RUNTIME_SUBDIRECTORY: 'ratelimit',
    RUNTIME_IGNOREDOTFILES: 'true',
    RUNTIME_WATCH_ROOT: 'false',
    LOG_LEVEL: 'info',
    USE_STATSD: 'false',
    CONFIG_TYPE: 'GRPC_XDS_SOTW',
    CONFIG_GRPC_XDS_SERVER_URL: o.xds ?? 'envoy-gateway:18001',
    CONFIG_GRPC_XDS_NODE_ID: 'envoy-ratelimit',
    GRPC_SERVER_USE_TLS: 'true',
    GRPC_SERVER_TLS_CERT: at('certs/tls.crt'),
    GRPC_SERVER_TLS_KEY: at('certs/tls.key'),
    GRPC_SERVER_TLS_CA_CERT: at('certs/ca.crt'),
    CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true',
    CONFIG_GRPC_XDS_CLIENT_TLS_CERT: at('certs/tls.crt'),
    CONFIG_GRPC_XDS_CLIENT_TLS_KEY: at('certs/tls.key'),
    CONFIG_GRPC_XDS_SERVER_TLS_CACERT: at('certs/ca.crt'),
    FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
    REDIS_SOCKET_TYPE: 'tcp',
    REDIS_URL: o.redis ?? 'redis.redis-system.svc.cluster.local:6379',
    USE_PROMETHEUS: 'true',
    PROMETHEUS_ADDR: o.prometheusAddr ?? ':19001',
    PROMETHEUS_MAPPER_YAML: at('etc/statsd-exporter/conf.yaml'),
  };
}
