/**
 * The Envoy config of `npm run demo`: envoy-ext-authz.yaml as shipped (ext_authz on every route), with the demo's
 * addresses, rules domain and a looser timeout (a laptop running a first request through a cold service), plus
 * one route through Envoy's `ratelimit` filter (RateLimitService), configured as envoy.yaml ships it: `/shop/`,
 * one descriptor (user, <x-user header>) in domain `shop`, the README's example.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

const ROOT = join(import.meta.dirname, '../..');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- parsed YAML

export interface DemoPorts {
  readonly ingress: number;
  readonly admin: number;
  readonly upstream: number;
  readonly grpc: number;
}

/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- walks parsed YAML */
function hcmOf(doc: Obj): Obj {
  return doc.static_resources.listeners.find((l: Obj) => l.name === 'ingress').filter_chains[0].filters[0].typed_config;
}

export function demoEnvoyConfig(ports: DemoPorts): string {
  const doc = parse(readFileSync(join(ROOT, 'envoy-ext-authz.yaml'), 'utf8')) as Obj;
  const at = (address: string, port: number) => ({ socket_address: { address, port_value: port } });
  doc.admin.address = at('127.0.0.1', ports.admin);
  doc.static_resources.listeners = (doc.static_resources.listeners as Obj[]).filter((l) => l.name === 'ingress'); // no kubelet here
  const ingress = doc.static_resources.listeners[0];
  ingress.address = at('127.0.0.1', ports.ingress);
  const hcm = hcmOf(doc);
  const routes = hcm.route_config.virtual_hosts[0].routes as Obj[];
  for (const route of routes) {
    const perRoute = route.typed_per_filter_config?.['envoy.filters.http.ext_authz'];
    if (perRoute?.check_settings) perRoute.check_settings.context_extensions = { ratelimit_domain: 'demo' };
  }
  const filters = hcm.http_filters as Obj[];
  filters.find((f) => f.name === 'envoy.filters.http.ext_authz')!.typed_config.grpc_service.timeout = '0.5s';

  // The ratelimit filter as envoy.yaml configures it, for domain "shop"; before the router.
  const shipped = hcmOf(parse(readFileSync(join(ROOT, 'envoy.yaml'), 'utf8')) as Obj).http_filters as Obj[];
  const ratelimit = structuredClone(shipped.find((f) => f.name === 'envoy.filters.http.ratelimit')!);
  ratelimit.typed_config.domain = 'shop';
  ratelimit.typed_config.timeout = '0.5s';
  filters.splice(
    filters.findIndex((f) => f.name === 'envoy.filters.http.router'),
    0,
    ratelimit,
  );
  const disabledAuthz = (routes.find((r) => r.typed_per_filter_config?.['envoy.filters.http.ext_authz']?.disabled === true) as Obj).typed_per_filter_config;
  routes.splice(routes.length - 1, 0, {
    match: { prefix: '/shop/' },
    route: { cluster: 'app', rate_limits: [{ actions: [{ request_headers: { header_name: 'x-user', descriptor_key: 'user' } }] }] },
    typed_per_filter_config: structuredClone(disabledAuthz), // this route asks over the ratelimit filter only
  });

  for (const cluster of doc.static_resources.clusters as Obj[]) {
    const endpoint = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint;
    endpoint.address = at('127.0.0.1', cluster.name === 'ratelimit' ? ports.grpc : ports.upstream);
  }
  return stringify(doc);
}
/* eslint-enable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return */
