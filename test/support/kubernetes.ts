/**
 * Manifest checks for deploy/k8s without a cluster: a small kustomize (the features our kustomizations use:
 * resources and configMapGenerator; anything else is refused), and validation of every rendered object
 * against the Kubernetes schemas of the npm packages kubernetes-models and @kubernetes-models/prometheus-operator,
 * twice: their JSON-schema validators (types, formats, required fields) and their TypeScript declarations
 * (through the TypeScript compiler: an unknown or misspelled field is an error, as with kubectl --validate=strict).
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> } } & Record<string, unknown>;

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'configMapGenerator']);

export function renderKustomization(dir: string): K8sObject[] {
  const file = join(dir, 'kustomization.yaml');
  const k = parseYaml(file)[0] as { resources?: string[]; configMapGenerator?: Generator[] } & Record<string, unknown>;
  for (const key of Object.keys(k)) if (!SUPPORTED.has(key)) throw new Error(`${file}: '${key}' is not supported by this renderer`);
  const objects: K8sObject[] = [];
  for (const r of k.resources ?? []) {
    const path = join(dir, r);
    objects.push(...(statSync(path).isDirectory() ? renderKustomization(path) : (parseYaml(path) as K8sObject[])));
  }
  const renamed = new Map<string, string>();
  for (const g of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const f of g.files ?? []) {
      const [key, path] = f.includes('=') ? (f.split('=', 2) as [string, string]) : [basename(f), f];
      data[key] = readFileSync(join(dir, path), 'utf8');
    }
    for (const l of g.literals ?? []) {
      const i = l.indexOf('=');
      data[l.slice(0, i)] = l.slice(i + 1);
    }
    // An overlay's `behavior: merge | replace` changes the ConfigMap a base generated under that name.
    const baseIndex = g.behavior === 'merge' || g.behavior === 'replace' ? objects.findIndex((o) => GENERATED.get(o) === g.name) : -1;
    if (g.behavior !== undefined && g.behavior !== 'create' && baseIndex < 0) throw new Error(`${file}: no ConfigMap '${g.name}' in the resources to ${g.behavior}`);
    const base = baseIndex >= 0 ? objects[baseIndex]! : undefined;
    if (g.behavior === 'merge') Object.assign(data, { ...(base!.data as Record<string, string>), ...data });
    // Like kustomize, a content hash suffix unless disabled (the digest differs from kustomize's own).
    const name = g.options?.disableNameSuffixHash === true ? g.name : `${g.name}-${createHash('sha256').update(JSON.stringify(data)).digest('hex').slice(0, 10)}`;
    renamed.set(g.name, name);
    if (base !== undefined) renamed.set(base.metadata.name, name);
    const made: K8sObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(g.options?.labels ? { labels: g.options.labels } : {}) }, data };
    GENERATED.set(made, g.name);
    if (base !== undefined) objects.splice(baseIndex, 1, made);
    else objects.push(made);
  }
  for (const o of objects) for (const v of podSpec(o)?.volumes ?? []) if (v.configMap && renamed.has(v.configMap.name)) v.configMap.name = renamed.get(v.configMap.name)!;
  return objects;
}

/** The generator name of each generated ConfigMap, for overlays that merge into or replace it. */
const GENERATED = new WeakMap<K8sObject, string>();

interface Generator {
  name: string;
  behavior?: 'create' | 'merge' | 'replace';
  files?: string[];
  literals?: string[];
  options?: { disableNameSuffixHash?: boolean; labels?: Record<string, string> };
}

function parseYaml(file: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const out: unknown[] = [];
  for (const d of docs) {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors.map(String).join('; ')}`);
    const v: unknown = d.toJSON();
    if (v !== null && v !== undefined) out.push(v);
  }
  return out;
}

export interface Container {
  name: string;
  image: string;
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
