/**
 * Manifest checks for deploy/k8s without a cluster: validation of every object the real kustomize renders
 * (test/support/kustomize.ts) against the Kubernetes schemas of the npm packages kubernetes-models and
 * @kubernetes-models/prometheus-operator, twice: their JSON-schema validators (types, formats, required fields) and their TypeScript declarations
 * (through the TypeScript compiler: an unknown or misspelled field is an error, as with kubectl --validate=strict).
 */
import { join, relative } from 'node:path';
import ts from 'typescript';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<
  string,
  unknown
>;

export interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string }[];
  ports?: { name?: string; containerPort: number }[];
  restartPolicy?: string;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}
export interface Probe {
  httpGet?: { path: string; port: number | string };
  grpc?: { port: number };
  tcpSocket?: { port: number | string };
}
export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
}
export interface PodSpec {
  securityContext?: SecurityContext;
  initContainers?: Container[];
  containers: Container[];
  volumes?: { name: string; configMap?: { name: string } }[];
}

/** The pod spec of a workload (Deployment, StatefulSet, DaemonSet, Job), if any. */
export function podSpec(o: K8sObject): PodSpec | undefined {
  const spec = o['spec'] as { template?: { spec?: PodSpec } } | undefined;
  return spec?.template?.spec;
}

/** kubernetes-models class module and interface name for each apiVersion/kind the manifests use. */
const MODELS: Record<string, [module: string, iface: string]> = {
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  'v1/Service': ['kubernetes-models/v1/Service', 'IService'],
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'IConfigMap'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget'],
  'monitoring.coreos.com/v1/ServiceMonitor': ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'IServiceMonitor'],
  'monitoring.coreos.com/v1/PrometheusRule': ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule', 'IPrometheusRule'],
};

const modelKey = (o: K8sObject) => `${o.apiVersion}/${o.kind}`;

/** JSON-schema validation with the packages' own validators; returns one message per invalid object. */
export async function schemaErrors(objects: readonly K8sObject[]): Promise<string[]> {
  const errors: string[] = [];
  for (const o of objects) {
    const model = MODELS[modelKey(o)];
    if (model === undefined) {
      errors.push(`${o.kind}/${o.metadata.name}: no schema known for ${modelKey(o)}`);
      continue;
    }
    const mod = (await import(model[0])) as Record<string, new (data: unknown) => { validate(): void }>;
    try {
      new mod[o.kind]!(o).validate();
    } catch (err) {
      errors.push(`${o.kind}/${o.metadata.name}: ${(err as Error).message}`);
    }
  }
  return errors;
}

/**
 * Strict field check: every object becomes a typed object literal in a generated TypeScript module, compiled
 * against the packages' declarations. Excess-property checks make unknown fields errors at any depth.
 */
export function strictFieldErrors(objects: readonly K8sObject[], projectDir: string): string[] {
  const file = join(projectDir, '__manifests__.generated.ts');
  const lines: string[] = [];
  objects.forEach((o, i) => {
    const model = MODELS[modelKey(o)];
    if (model === undefined) return;
    lines.push(`import type { ${model[1]} as T${i} } from '${model[0]}';`);
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(o, null, 1)};`);
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const text = source.split('\n');
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file === undefined || d.start === undefined) return message;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    return `${relative(projectDir, d.file.fileName)}:${line + 1}: ${message} (at ${text[line]?.trim() ?? ''})`;
  });
}

/** "256Mi" → bytes. */
export function quantityBytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G)?$/.exec(q);
  if (m === null) throw new Error(`not a memory quantity: ${q}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}
