/**
 * The Kubernetes Service in front of ratelimit replicas, played by an Envoy: an L4 proxy (tcp_proxy), round robin
 * per connection over the replicas that pass a readiness check, as kube-proxy spreads connections over the ready
 * endpoints. No connection is retried on another replica: one to a replica that is not ready fails, as through
 * kube-proxy. Readiness, checked every 100 ms:
 * - a pod with `httpPort`: its admin server answers GET /readyz with 200, as a Kubernetes readiness probe; a
 *   replica that got SIGTERM fails it at once, and leaves the Service within one check;
 * - else: it accepts TCP connections on its gRPC port.
 */
export interface ServicePod {
  readonly grpcPort: number;
  readonly httpPort?: number;
}

export function serviceProxy(pods: readonly ServicePod[]): object {
  const probe = { timeout: '0.5s', interval: '0.1s', no_traffic_interval: '0.1s', unhealthy_threshold: 1, healthy_threshold: 1 };
  const byHttp = pods.every((p) => p.httpPort !== undefined);
  return {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
    static_resources: {
      listeners: [
        {
          name: 'service',
          address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.tcp_proxy',
                  typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', stat_prefix: 'svc', cluster: 'pods' },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        {
          name: 'pods',
          type: 'STATIC',
          connect_timeout: '1s',
          lb_policy: 'ROUND_ROBIN',
          common_lb_config: { healthy_panic_threshold: { value: 0 } },
          health_checks: [byHttp ? { ...probe, http_health_check: { path: '/readyz' } } : { ...probe, tcp_health_check: {} }],
          load_assignment: {
            cluster_name: 'pods',
            endpoints: [
              {
                lb_endpoints: pods.map((p) => ({
                  endpoint: {
                    address: { socket_address: { address: '127.0.0.1', port_value: p.grpcPort } },
                    ...(byHttp ? { health_check_config: { port_value: p.httpPort } } : {}),
                  },
                })),
              },
            ],
          },
        },
      ],
    },
  };
}
