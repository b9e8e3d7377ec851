/**
 * allFiles (RUNTIME_ROOT...): every file, in subdirectories too, as envoyproxy/ratelimit loads them; dot files and
 * dot directories only with dotFiles (RUNTIME_IGNOREDOTFILES unset or false); Kubernetes' `..` entries never.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../../src/config/index.js';
import { rulesFolder } from '../../support/rules-folder.js';

const folder = rulesFolder();
const rule = (domain: string) => `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n`;
const dir = folder.write({
  noext: rule('d1'),
  'sub/nested.yaml': rule('d2'),
  '.dot.yaml': rule('d3'),
  '..data/x.yaml': rule('d4'),
  'notes.yml': rule('d5'),
  '.hidden/y': rule('d6'),
});
afterAll(() => folder.remove());

describe('loadConfigDir with allFiles', () => {
  it('loads every non-dot file, whatever its extension, in non-dot subdirectories too', async () => {
    const result = await loadConfigDir(dir, { mergeDomains: false, allFiles: true });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect([...result.config.domains.keys()].sort()).toEqual(['d1', 'd2', 'd5']);
    expect(result.config.files.map(String).sort()).toEqual(['noext', 'notes.yml', 'sub/nested.yaml']);
  });

  it('with dotFiles, dot files and dot directories too, but never the `..` entries of a ConfigMap', async () => {
    const result = await loadConfigDir(dir, { mergeDomains: false, allFiles: true, dotFiles: true });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect([...result.config.domains.keys()].sort()).toEqual(['d1', 'd2', 'd3', 'd5', 'd6']);
    expect(result.config.files.map(String).sort()).toEqual(['.dot.yaml', '.hidden/y', 'noext', 'notes.yml', 'sub/nested.yaml']);
  });

  it('without it, only the *.yaml / *.yml files at the top level', async () => {
    const result = await loadConfigDir(dir, { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect([...result.config.domains.keys()]).toEqual(['d5']);
  });
});
