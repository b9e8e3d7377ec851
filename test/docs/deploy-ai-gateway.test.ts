/**
 * deploy/k8s/ai-gateway (docs/ai-gateway.md): the rate-limit service Envoy AI Gateway's QuotaPolicy calls,
 * rendered by the real kustomize and checked against the Kubernetes schemas, against the names the AI Gateway
 * uses (its extension server dials envoy-ai-gateway-ratelimit.envoy-gateway-system:8081; its controller serves
 * the rules on 18002 to node envoy-ai-gateway-ratelimit), and read by our settings loader as the pod's
 * environment would be.
 */
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { loadSettings } from '../../src/settings/settings.js';
import { podSpec, schemaErrors, strictFieldErrors, type Container, type K8sObject } from '../support/kubernetes.js';
import { describeKustomize, kustomizeBuild } from '../support/kustomize.js';

const ROOT = join(import.meta.dirname, '../..');

describeKustomize('deploy/k8s/ai-gateway', () => {
  let objects: K8sObject[];
  let container: Container;
  beforeAll(() => {
    objects = kustomizeBuild(join(ROOT, 'deploy/k8s/ai-gateway'));
    const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'envoy-ai-gateway-ratelimit')!;
    container = podSpec(deployment)!.containers[0]!;
  });
  const env = (): Record<string, string> => Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));

  it('renders the service, its Redis, in envoy-gateway-system, valid against the Kubernetes schemas', async () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`).sort()).toEqual([
      'Deployment/envoy-gateway-system/envoy-ai-gateway-ratelimit',
      'Deployment/envoy-gateway-system/envoy-ai-gateway-ratelimit-redis',
      'Service/envoy-gateway-system/envoy-ai-gateway-ratelimit',
      'Service/envoy-gateway-system/envoy-ai-gateway-ratelimit-redis',
    ]);
    expect(await schemaErrors(objects)).toEqual([]);
    expect(strictFieldErrors(objects, ROOT)).toEqual([]);
  }, 60_000);

  it('answers where the AI Gateway dials it (gRPC 8081) and takes the rules from its controller (18002, node envoy-ai-gateway-ratelimit)', () => {
    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'envoy-ai-gateway-ratelimit') as K8sObject & {
      spec: { ports: { name: string; port: number }[] };
    };
    expect(service.spec.ports.find((p) => p.name === 'grpc')?.port).toBe(8081);
    expect(env()).toMatchObject({
      CONFIG_TYPE: 'GRPC_XDS_SOTW',
      CONFIG_GRPC_XDS_NODE_ID: 'envoy-ai-gateway-ratelimit',
      CONFIG_GRPC_XDS_SERVER_URL: 'ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local:18002',
    });
    expect(container.command).toEqual(['/bin/ratelimit']);
  });

  it('runs as uid 65534 on a read-only root, probed on /healthcheck', () => {
    expect(container.securityContext).toMatchObject({ runAsUser: 65534, runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.readinessProbe?.httpGet?.path).toBe('/healthcheck');
  });

  it('its environment loads as this service reads it: xDS rules, Redis, gRPC 8081, Prometheus on :19001', () => {
    const { settings } = loadSettings(env());
    expect(settings).toMatchObject({
      configType: 'GRPC_XDS_SOTW',
      xdsNodeId: 'envoy-ai-gateway-ratelimit',
      xdsServerUrl: 'ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local:18002',
      forceStartWithoutInitialConfig: false,
      backend: 'redis',
      redisUrl: 'redis://envoy-ai-gateway-ratelimit-redis:6379',
      grpcPort: 8081,
      httpPort: 8080,
      usePrometheus: true,
      prometheusAddr: ':19001',
    });
  });
});
