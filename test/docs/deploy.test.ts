/**
 * The Kubernetes example ships copies of the example rules and envoy.yaml (kustomize reads files only below
 * its own folder). They must stay identical to the originals, and the rules must load.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigDir } from '../../src/config/index.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

describe('deploy/k8s/base', () => {
  it('ships the same rules and envoy.yaml as the repository root', () => {
    expect(read('deploy/k8s/base/config/example.yaml')).toBe(read('config/example.yaml'));
    expect(read('deploy/k8s/base/envoy.yaml')).toBe(read('envoy.yaml'));
  });

  it('has rules that load, for the domain envoy.yaml sends', async () => {
    const result = await loadConfigDir(join(ROOT, 'deploy/k8s/base/config'), { mergeDomains: false });
    expect(result.ok).toBe(true);
    const envoy = read('envoy.yaml');
    const domain = /^\s+domain: (\S+)/m.exec(envoy)?.[1];
    expect(domain).toBe('edge');
    if (result.ok) expect([...result.config.domains.keys()]).toEqual([domain]);
  });

  it('parses as YAML and mounts the rules as a directory (no subPath, so ConfigMap edits arrive)', () => {
    const docs = read('deploy/k8s/base/deployment.yaml')
      .split(/^---$/m)
      .map((d) => parse(d) as Record<string, unknown>);
    const text = JSON.stringify(docs);
    expect(text).toContain('"mountPath":"/etc/ratelimit"');
    expect(text).not.toContain('subPath');
    expect(text).toContain('"restartPolicy":"Always"');
    parse(read('deploy/k8s/base/kustomization.yaml'));
    parse(read('deploy/k8s/base/redis.yaml').split(/^---$/m)[0]!);
  });
});
