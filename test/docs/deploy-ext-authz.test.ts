/**
 * envoy-ext-authz.yaml (and its copy in deploy/k8s/ext-authz) checked against Envoy's API protos, as
 * deploy-envoy.test.ts checks envoy.yaml, plus what the ext_authz set-up relies on; and the kustomize overlay
 * rendered and validated, with the rules it adds loading and serving the domains the routes name.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any -- walks parsed YAML whose shape the proto check asserts */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigDir } from '../../src/config/index.js';
import { EnvoyProtos } from '../support/envoy-protos.js';
import { podSpec, schemaErrors, type K8sObject } from '../support/kubernetes.js';
import { describeKustomize, kustomizeBuild } from '../support/kustomize.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
type Obj = Record<string, any>;

let protos: EnvoyProtos;
let envoy: Obj;
beforeAll(() => {
  protos = new EnvoyProtos();
  envoy = parse(read('envoy-ext-authz.yaml')) as Obj;
});

const hcm = (e: Obj): Obj => e.static_resources.listeners.find((l: Obj) => l.name === 'ingress').filter_chains[0].filters[0].typed_config;
const extAuthz = (e: Obj): Obj => hcm(e).http_filters.find((f: Obj) => f.name === 'envoy.filters.http.ext_authz').typed_config;

describe('envoy-ext-authz.yaml', () => {
  it('is a valid v3 Bootstrap against the Envoy API protos', () => {
    expect(protos.check('envoy.config.bootstrap.v3.Bootstrap', envoy)).toEqual([]);
  });

  it('catches a misspelled ext_authz field and a wrong per-route type (so the check above can fail)', () => {
    const broken = structuredClone(envoy);
    extAuthz(broken).failure_mode_alow = true;
    const route = hcm(broken).route_config.virtual_hosts[0].routes.at(-1);
    route.typed_per_filter_config['envoy.filters.http.ext_authz'].check_settings.context_extension = {};
    expect(protos.check('envoy.config.bootstrap.v3.Bootstrap', broken).sort()).toEqual([
      expect.stringContaining("no field 'failure_mode_alow' in envoy.extensions.filters.http.ext_authz.v3.ExtAuthz"),
      expect.stringContaining("no field 'context_extension' in envoy.extensions.filters.http.ext_authz.v3.CheckSettings"),
    ]);
  });

  it('uses ext_authz over gRPC V3 to the sidecar on loopback with a realistic timeout, failing open, router last', () => {
    const f = extAuthz(envoy);
    expect(f.transport_api_version).toBe('V3');
    expect(f.grpc_service.envoy_grpc.cluster_name).toBe('ratelimit');
    expect(f.grpc_service.timeout).toBe('0.05s');
    expect(f.failure_mode_allow).toBe(true);
    expect(f.with_request_body).toBeUndefined();
    const cluster = envoy.static_resources.clusters.find((c: Obj) => c.name === 'ratelimit');
    expect(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address).toEqual({ address: '127.0.0.1', port_value: 8081 });
    expect(cluster.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].explicit_http_config).toHaveProperty(
      'http2_protocol_options',
    );
    expect(hcm(envoy).http_filters.at(-1).name).toBe('envoy.filters.http.router');
    expect(hcm(envoy).use_remote_address).toBe(true);
  });

  it('names a rules domain per route in context_extensions, and the rules serve it with an authz block', async () => {
    const routes = hcm(envoy).route_config.virtual_hosts[0].routes as Obj[];
    const domains = routes
      .map((r) => r.typed_per_filter_config?.['envoy.filters.http.ext_authz']?.check_settings?.context_extensions?.ratelimit_domain)
      .filter((d) => d !== undefined);
    expect(domains.length).toBeGreaterThan(0);
    const result = await loadConfigDir(join(ROOT, 'config'), { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.map(String).join('\n'));
    for (const d of domains) expect(result.config.authz?.get(d as string), `domain ${String(d)}`).toBeDefined();
  });

  it('normalizes paths before ext_authz sees them, so a path limit has one spelling', () => {
    expect(hcm(envoy)).toMatchObject({ normalize_path: true, merge_slashes: true, path_with_escaped_slashes_action: 'UNESCAPE_AND_REDIRECT' });
  });

  it('strips the region headers the client could send before ext_authz reads them', () => {
    const filters = hcm(envoy).http_filters as Obj[];
    const names = filters.map((f) => f.name);
    const removed = filters[names.indexOf('envoy.filters.http.header_mutation')]!.typed_config.mutations.request_mutations.map((m: Obj) => m.remove);
    expect(removed).toEqual(expect.arrayContaining(['cf-ipcountry', 'x-country-code']));
    expect(names.indexOf('envoy.filters.http.header_mutation')).toBeLessThan(names.indexOf('envoy.filters.http.ext_authz'));
  });
});

describeKustomize('deploy/k8s/ext-authz', () => {
  let objects: K8sObject[];
  beforeAll(() => {
    objects = kustomizeBuild(join(ROOT, 'deploy/k8s/ext-authz'));
  });

  it('ships the same envoy-ext-authz.yaml and rules as the repository root', () => {
    expect(read('deploy/k8s/ext-authz/envoy-ext-authz.yaml')).toBe(read('envoy-ext-authz.yaml'));
    expect(read('deploy/k8s/ext-authz/config/web.yaml')).toBe(read('config/web.yaml'));
  });

  it('replaces the Envoy bootstrap and adds the rules to the base, and validates against the Kubernetes schemas', async () => {
    const configMaps = objects.filter((o) => o.kind === 'ConfigMap');
    const envoyConfig = configMaps.filter((o) => o.metadata.name.startsWith('envoy-config'));
    expect(envoyConfig).toHaveLength(1);
    expect((envoyConfig[0]!.data as Record<string, string>)['envoy.yaml']).toBe(read('envoy-ext-authz.yaml'));
    const web = podSpec(objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'web')!)!;
    expect(web.volumes!.find((v) => v.name === 'envoy-config')!.configMap!.name).toBe(envoyConfig[0]!.metadata.name);
    const rules = configMaps.find((o) => o.metadata.name === 'ratelimit-config')!.data as Record<string, string>;
    expect(Object.keys(rules).sort()).toEqual(['example.yaml', 'web.yaml']);
    expect(await schemaErrors(objects)).toEqual([]);
  });

  it('has rules that load together', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-overlay-'));
    try {
      const rules = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'ratelimit-config')!.data as Record<string, string>;
      for (const [name, text] of Object.entries(rules)) writeFileSync(join(dir, name), text);
      const result = await loadConfigDir(dir, { mergeDomains: false });
      expect(result.ok && [...result.config.domains.keys()].sort()).toEqual(['edge', 'web']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
