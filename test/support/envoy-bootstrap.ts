/**
 * Test-owned Envoy configs for the rule features (test/envoy/*): one `ingress` listener with Envoy's rate-limit
 * filter (shaped like envoy.yaml's: domain, timeout, x-ratelimit headers, the `ratelimit` HTTP/2 cluster) and
 * routes whose `rate_limits` the test chooses; optional HTTP filters before it (e.g. to set dynamic metadata).
 */
import { applyOverrides, type EnvoyAddress } from './envoy-config.js';
import type { TestPki } from './tls.js';

type Obj = Record<string, unknown>;

export interface RlsRoute {
  /** Path prefix (routes match in the order given). */
  prefix: string;
  /** The route's `rate_limits` (Envoy's config.route.v3.RateLimit list). */
  rateLimits: Obj[];
  /**
   * Put `rateLimits` in the route's `typed_per_filter_config` (RateLimitPerRoute) instead of `route.rate_limits`:
   * Envoy 1.40 reads `hits_addend` only there (and in the filter's own `rate_limits`), not in route.rate_limits.
   */
  perRoute?: boolean;
  /** Further fields of the route's `route` action (e.g. `timeout`). */
  route?: Obj;
  /** Headers added to the request the upstream receives (`request_headers_to_add`). */
  requestHeadersToAdd?: { key: string; value: string }[];
  /** With `perRoute`: the RateLimitPerRoute's own `domain`. */
  domain?: string;
}

export interface RlsBootstrapOptions {
  service: EnvoyAddress;
  upstream: EnvoyAddress;
  domain: string;
  routes: RlsRoute[];
  /** Fields of the rate-limit filter's typed_config, over the defaults below. */
  filter?: Obj;
  /** HTTP filters before the rate-limit filter. */
  before?: Obj[];
  /** The rate-limit filter's name (default `envoy.filters.http.ratelimit`), the key of its per-route configs. */
  filterName?: string;
}

const HCM = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';

/** A one-endpoint cluster; its address is filled in by applyOverrides. */
function staticCluster(name: string, http2: boolean): Obj {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '1s',
    ...(http2
      ? {
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              // As Envoy Gateway makes its ratelimit_cluster (its translator's testdata, ratelimit.clusters.yaml):
              // HTTP/2 with its windows and no cap on the calls a connection carries; TLS aside.
              explicit_http_config: { http2_protocol_options: { initial_connection_window_size: 1048576, initial_stream_window_size: 65536 } },
            },
          },
          lb_policy: 'LEAST_REQUEST',
          per_connection_buffer_limit_bytes: 32768,
        }
      : {}),
    load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: [{ endpoint: { address: {} } }] }] },
  };
}

export function rlsBootstrap(o: RlsBootstrapOptions): Obj {
  const filterName = o.filterName ?? 'envoy.filters.http.ratelimit';
  const routes = o.routes.map((r) => ({
    match: { prefix: r.prefix },
    route: { cluster: 'app', ...(r.perRoute ? {} : { rate_limits: r.rateLimits }), ...r.route },
    ...(r.perRoute
      ? {
          typed_per_filter_config: {
            [filterName]: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute',
              rate_limits: r.rateLimits,
              ...(r.domain !== undefined ? { domain: r.domain } : {}),
            },
          },
        }
      : {}),
    ...(r.requestHeadersToAdd
      ? { request_headers_to_add: r.requestHeadersToAdd.map((header) => ({ header, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' })) }
      : {}),
  }));
  const rateLimitFilter = {
    name: filterName,
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit',
      domain: o.domain,
      // generous: a loaded 2-core CI machine, and a timeout turns every decision into a fail-open 200
      timeout: '2s',
      failure_mode_deny: false,
      enable_x_ratelimit_headers: 'DRAFT_VERSION_03',
      rate_limit_service: { grpc_service: { envoy_grpc: { cluster_name: 'ratelimit' } }, transport_api_version: 'V3' },
      ...o.filter,
    },
  };
  const doc = {
    admin: { address: {} },
    static_resources: {
      listeners: [
        {
          name: 'ingress',
          address: {},
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type': HCM,
                    stat_prefix: 'ingress',
                    use_remote_address: true,
                    route_config: { name: 'local', virtual_hosts: [{ name: 'app', domains: ['*'], routes }] },
                    http_filters: [
                      ...(o.before ?? []),
                      rateLimitFilter,
                      { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [staticCluster('app', false), staticCluster('ratelimit', true)],
    },
  };
  return applyOverrides(doc, { clusters: { app: o.upstream, ratelimit: o.service } });
}

/**
 * The `transport_socket` of a cluster that speaks TLS (HTTP/2 by ALPN) to a server with the test PKI's server
 * certificate, as Envoy Gateway's ratelimit_cluster does; `mutual`: with the PKI's client certificate.
 */
export function upstreamTls(pki: TestPki, mutual = false): Obj {
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
      sni: pki.serverName,
      common_tls_context: {
        alpn_protocols: ['h2'],
        validation_context: {
          trusted_ca: { filename: pki.caCert },
          match_typed_subject_alt_names: [{ san_type: 'DNS', matcher: { exact: pki.serverName } }],
        },
        ...(mutual ? { tls_certificates: [{ certificate_chain: { filename: pki.clientCert }, private_key: { filename: pki.clientKey } }] } : {}),
      },
    },
  };
}
