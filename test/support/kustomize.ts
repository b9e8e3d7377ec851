/**
 * The real kustomize for the manifest tests: KUSTOMIZE_BIN, else `kustomize` on PATH, else `kubectl kustomize`
 * (kubectl embeds kustomize). `.ci/run` installs a pinned kustomize when none is there; under CI=true a missing
 * kustomize fails the run instead of skipping the manifest tests.
 */
import { spawnSync } from 'node:child_process';
import { describe } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { onPath } from './envoy.js';
import type { K8sObject } from './kubernetes.js';

/** The command that builds a kustomization: argv before the directory. */
export type Kustomize = readonly [file: string, ...args: string[]];

/** The kustomize command, or why there is none. Under CI=true a missing kustomize throws. */
export function findKustomize(): { command: Kustomize } | { reason: string } {
  const fromEnv = process.env['KUSTOMIZE_BIN'];
  const kustomize = fromEnv !== undefined && fromEnv !== '' ? fromEnv : onPath('kustomize');
  const kubectl = onPath('kubectl');
  const command: Kustomize | undefined = kustomize !== undefined ? [kustomize, 'build'] : kubectl !== undefined ? [kubectl, 'kustomize'] : undefined;
  const found =
    command !== undefined
      ? { command }
      : { reason: 'no kustomize: set KUSTOMIZE_BIN or put `kustomize` (or kubectl) on PATH (go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1)' };
  if ('reason' in found && process.env['CI'] === 'true') throw new Error(`CI=true and ${found.reason}`);
  return found;
}

let found: ReturnType<typeof findKustomize> | undefined;

/** `describe` for tests that need kustomize: skipped, with the reason in its name and on stderr, when it is missing outside CI. */
export function describeKustomize(name: string, body: () => void): void {
  found ??= findKustomize();
  if ('reason' in found) {
    process.stderr.write(`skipping "${name}": ${found.reason}\n`);
    describe.skip(`${name} [skipped: ${found.reason}]`, body);
  } else {
    describe(name, body);
  }
}

/** `kustomize build dir`: its exit status and output, for tests of what kustomize refuses. */
export function kustomizeRun(dir: string): { ok: boolean; stdout: string; stderr: string } {
  found ??= findKustomize();
  if ('reason' in found) throw new Error(found.reason);
  const [file, ...args] = found.command;
  const out = spawnSync(file, [...args, dir], { encoding: 'utf8', timeout: 60_000 });
  return { ok: out.status === 0, stdout: out.stdout, stderr: `${out.error?.message ?? ''}${out.stderr}` };
}

/** The objects `kustomize build dir` renders; throws with kustomize's message when it refuses the kustomization. */
export function kustomizeBuild(dir: string): K8sObject[] {
  const out = kustomizeRun(dir);
  if (!out.ok) throw new Error(`kustomize build ${dir} failed: ${out.stderr}`);
  const objects: K8sObject[] = [];
  for (const doc of parseAllDocuments(out.stdout)) {
    if (doc.errors.length > 0) throw new Error(`kustomize build ${dir} printed invalid YAML: ${doc.errors.map(String).join('; ')}`);
    const value = doc.toJSON() as K8sObject | null;
    if (value !== null) objects.push(value);
  }
  return objects;
}
