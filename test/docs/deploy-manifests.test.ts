/**
 * Every kustomization under deploy/ built by the real kustomize (an overlay inside its own
 * base is a cycle kustomize refuses). The rendered kustomizations (deploy/k8s and
 * deploy/k8s/monitoring) validated against
 * the Kubernetes schemas (npm: kubernetes-models, @kubernetes-models/prometheus-operator), and the rules a
 * kubelet and a restricted Pod Security admission apply: numeric non-root UIDs (runAsNonRoot cannot be checked
 * against a user *name*), no privilege escalation, no capabilities, RuntimeDefault seccomp, read-only root;
 * plus the image (Dockerfile) and the sizing the service's settings imply.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { podSpec, quantityBytes, schemaErrors, strictFieldErrors, type Container, type K8sObject, type PodSpec } from '../support/kubernetes.js';
import { describeKustomize, kustomizeBuild, kustomizeRun } from '../support/kustomize.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const MiB = 2 ** 20;

/** Every folder under deploy/ that holds a kustomization.yaml, relative to the repository. */
function kustomizations(dir = join(ROOT, 'deploy')): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f === 'kustomization.yaml' || f.endsWith('/kustomization.yaml'))
    .map((f) => relative(ROOT, dirname(join(dir, f))))
    .sort();
}

let objects: K8sObject[];
let web: PodSpec;
let sidecar: Container;

describeKustomize('kustomize', () => {
  it('builds every kustomization under deploy/', () => {
    const dirs = kustomizations();
    expect(dirs).toEqual(expect.arrayContaining(['deploy/k8s', 'deploy/k8s/base', 'deploy/k8s/ext-authz', 'deploy/k8s/monitoring']));
    for (const d of dirs) {
      const out = kustomizeRun(join(ROOT, d));
      expect(out.stderr, d).toBe('');
      expect(out.ok, d).toBe(true);
    }
  });

  it('refuses an overlay that lives inside its base (the layout deploy/k8s had; so the check above can fail)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-kustomize-'));
    try {
      cpSync(join(ROOT, 'deploy/k8s/base'), dir, { recursive: true });
      cpSync(join(ROOT, 'deploy/k8s/ext-authz'), join(dir, 'ext-authz'), { recursive: true });
      const overlay = join(dir, 'ext-authz/kustomization.yaml');
      writeFileSync(overlay, readFileSync(overlay, 'utf8').replace('- ../base', '- ../'));
      const out = kustomizeRun(join(dir, 'ext-authz'));
      expect(out.ok).toBe(false);
      expect(out.stderr).toContain('cycle detected');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeKustomize('manifests', () => {
  beforeAll(() => {
    objects = [...kustomizeBuild(join(ROOT, 'deploy/k8s')), ...kustomizeBuild(join(ROOT, 'deploy/k8s/monitoring'))];
    web = podSpec(find('Deployment', 'web'))!;
    sidecar = web.initContainers!.find((c) => c.name === 'ratelimit')!;
  });

  function find(kind: string, name: string): K8sObject {
    const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
    if (o === undefined) throw new Error(`no ${kind}/${name} in the rendered manifests`);
    return o;
  }
  const env = (c: Container, name: string) => c.env?.find((e) => e.name === name)?.value;
  const workloads = () => objects.filter((o) => podSpec(o) !== undefined);

  describe('rendered kustomizations', () => {
    it('render every resource and generated ConfigMap', () => {
      expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
        expect.arrayContaining([
          'Deployment/web',
          'Deployment/redis',
          'PodDisruptionBudget/web',
          'ConfigMap/ratelimit-config',
          'ServiceMonitor/ratelimit-sidecar',
          'PrometheusRule/ratelimit-sidecar',
          'ConfigMap/ratelimit-grafana-dashboard',
        ]),
      );
      // The rules ConfigMap keeps its name (hot reload, no rollout); envoy's gets a hash and the volume follows it.
      const envoyConfig = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('envoy-config-'))!;
      expect(web.volumes!.find((v) => v.name === 'envoy-config')!.configMap!.name).toBe(envoyConfig.metadata.name);
    });

    it('validate against the Kubernetes JSON schemas', async () => {
      expect(await schemaErrors(objects)).toEqual([]);
    });

    it('have no unknown or mistyped field at any depth (strict, like kubectl --validate=strict)', () => {
      expect(strictFieldErrors(objects, ROOT)).toEqual([]);
    }, 60_000);

    it('catch a misspelled field, a wrong type and a user name instead of a UID (so the checks above can fail)', async () => {
      const broken = structuredClone(objects);
      const spec = podSpec(broken.find((o) => o.kind === 'Deployment' && o.metadata.name === 'web')!)!;
      (spec.initContainers![0]!.securityContext as Record<string, unknown>)['runAsUser'] = 'node';
      (spec.containers[0] as unknown as Record<string, unknown>)['readinesProbe'] = {};
      expect(await schemaErrors(broken)).toEqual([expect.stringContaining('runAsUser must be integer')]);
      const strict = strictFieldErrors(broken, ROOT);
      expect(strict).toHaveLength(2);
      expect(strict).toEqual(
        expect.arrayContaining([
          expect.stringContaining("Type 'string' is not assignable to type 'number'"),
          expect.stringMatching(/readinesProbe.*does not exist in type 'IContainer'/),
        ]),
      );
    }, 60_000);
  });

  describe('pod security (every container of every workload)', () => {
    it('runs with a numeric non-root UID, RuntimeDefault seccomp, read-only root, no escalation and no capabilities', () => {
      for (const o of workloads()) {
        const pod = podSpec(o)!;
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          const where = `${o.metadata.name}/${c.name}`;
          const sc = { ...pod.securityContext, ...c.securityContext };
          expect(sc.runAsNonRoot, where).toBe(true);
          expect(Number.isInteger(sc.runAsUser), `${where}: runAsUser ${sc.runAsUser} is an integer`).toBe(true);
          expect(sc.runAsUser, `${where}: runAsUser`).toBeGreaterThan(0);
          expect(sc.seccompProfile?.type, where).toBe('RuntimeDefault');
          expect(c.securityContext?.readOnlyRootFilesystem, where).toBe(true);
          expect(c.securityContext?.allowPrivilegeEscalation, where).toBe(false);
          expect(c.securityContext?.privileged ?? false, where).toBe(false);
          expect(c.securityContext?.capabilities?.drop, where).toContain('ALL');
          expect(c.securityContext?.capabilities?.add ?? [], where).toEqual([]);
          expect(c.resources?.limits?.memory, `${where}: memory limit`).toBeDefined();
        }
      }
    });

    it('uses pinned images: an explicit version, never latest', () => {
      for (const o of workloads()) {
        const pod = podSpec(o)!;
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          expect(c.image, `${o.metadata.name}/${c.name}`).toMatch(/:v?\d+\.\d+(\.\d+)?(-[a-z0-9.]+)?$/);
          expect(c.image).not.toMatch(/latest/);
        }
      }
      expect(web.containers.find((c) => c.name === 'envoy')!.image).toMatch(/^envoyproxy\/envoy:v1\.\d+\.\d+$/);
    });
  });

  describe('the sidecar', () => {
    it('runs as the UID the image declares (Dockerfile USER is numeric)', () => {
      const user = /^USER\s+(\d+)(?::(\d+))?\s*$/m.exec(read('Dockerfile'));
      expect(user, 'Dockerfile USER is uid[:gid]').not.toBeNull();
      expect(sidecar.securityContext?.runAsUser).toBe(Number(user![1]));
    });

    it('is probed as the lead decided: ready = GET /healthcheck, alive = GET /healthz, on the admin port', () => {
      const admin = sidecar.ports!.find((p) => p.name === 'admin')!;
      expect(sidecar.readinessProbe?.httpGet).toEqual({ path: '/healthcheck', port: 'admin' });
      expect(sidecar.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'admin' });
      expect(sidecar.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'admin' });
      expect(admin.containerPort).toBe(8080);
      expect(sidecar.restartPolicy).toBe('Always');
      expect(env(sidecar, 'GRPC_HOST')).toBe('127.0.0.1'); // only Envoy (same pod) asks over gRPC
    });

    it('fits its memory limit: store bound in bytes, heap cap between the store and the limit', () => {
      const limit = quantityBytes(sidecar.resources!.limits!.memory!);
      const request = quantityBytes(sidecar.resources!.requests!.memory!);
      const store = Number(env(sidecar, 'MEMORY_MAX_BYTES'));
      const heap = Number(/--max-old-space-size=(\d+)/.exec(env(sidecar, 'NODE_OPTIONS') ?? '')?.[1]) * MiB;
      expect(store).toBeGreaterThan(0);
      // The key bound agrees with the byte bound (measured: ~250 bytes per key; docs/kubernetes.md, sizing).
      expect(Number(env(sidecar, 'MEMORY_MAX_KEYS')) * 256).toBeLessThanOrEqual(store);
      expect(heap, 'the heap holds the store plus 64 MiB of everything else').toBeGreaterThanOrEqual(store + 64 * MiB);
      expect(limit, 'the limit leaves 64 MiB beyond the heap (code, buffers, young generation)').toBeGreaterThanOrEqual(heap + 64 * MiB);
      // A larger young generation is memory too: V8 keeps up to three semi-spaces (two, and the new
      // large-object space), measured in docs/performance.md; with code and buffers (32 MiB) it fits the limit.
      const semi = Number(/--max-semi-space-size=(\d+)/.exec(env(sidecar, 'NODE_OPTIONS') ?? '')?.[1] ?? 16) * MiB;
      expect(limit, 'the limit holds the old generation, three semi-spaces and 32 MiB').toBeGreaterThanOrEqual(heap + 3 * semi + 32 * MiB);
      expect(request).toBeLessThanOrEqual(limit);
    });

    it('shares limits with the replica count it is told (EXPECTED_REPLICAS = spec.replicas)', () => {
      expect(Number(env(sidecar, 'EXPECTED_REPLICAS'))).toBe((find('Deployment', 'web')['spec'] as { replicas: number }).replicas);
    });

    it('is scraped: annotations and a ServiceMonitor that reach the admin port; a PodDisruptionBudget covers the pods', () => {
      const template = (
        find('Deployment', 'web')['spec'] as { template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } }
      ).template;
      expect(template.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080', 'prometheus.io/path': '/metrics' });
      const sm = find('ServiceMonitor', 'ratelimit-sidecar')['spec'] as {
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; path: string }[];
      };
      const svc = objects.find((o) => o.kind === 'Service' && Object.entries(sm.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v))!;
      const svcSpec = svc['spec'] as { selector: Record<string, string>; ports: { name: string; targetPort: string }[] };
      const port = svcSpec.ports.find((p) => p.name === sm.endpoints[0]!.port)!;
      expect(port.targetPort).toBe('admin');
      expect(sm.endpoints[0]!.path).toBe('/metrics');
      expect(template.metadata.labels).toMatchObject(svcSpec.selector);
      const pdb = find('PodDisruptionBudget', 'web')['spec'] as { selector: { matchLabels: Record<string, string> } };
      expect(template.metadata.labels).toMatchObject(pdb.selector.matchLabels);
    });
  });
});

describe('the image', () => {
  const dockerfile = () => read('Dockerfile');

  it('builds on a pinned, maintained Node.js LTS and runs compiled JavaScript only', () => {
    const version = /^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile())?.[1];
    expect(version).toMatch(/^(24|26)\.\d+\.\d+$/);
    const runtime = dockerfile()
      .split(/^FROM /m)
      .at(-1)!;
    expect(runtime).toContain('npm ci --omit=dev');
    expect(runtime).not.toMatch(/^COPY (\.\/)?src\b/m);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist/m);
  });

  it('caps malloc arenas at two where the service runs (image and npm start): resident memory under load', () => {
    const runtime = dockerfile()
      .split(/^FROM /m)
      .at(-1)!;
    expect(runtime).toMatch(/^ENV MALLOC_ARENA_MAX=2$/m);
    const pkg = JSON.parse(read('package.json')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toMatch(/^MALLOC_ARENA_MAX=2 node /);
  });

  it('answers at /bin/ratelimit like the reference image', () => {
    expect(dockerfile()).toMatch(/^COPY bin\/ratelimit-reference\.sh \/bin\/ratelimit$/m);
    expect(dockerfile()).toMatch(/chmod 0755 \/bin\/ratelimit/);
  });

  it('keeps dependencies, history and tests out of the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const p of ['.git', 'node_modules', 'dist', 'test', '.env']) expect(ignored).toContain(p);
  });

  it('has tsx as a dev dependency only', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    expect(pkg.dependencies).not.toHaveProperty('tsx');
    expect(pkg.devDependencies).toHaveProperty('tsx');
  });
});
