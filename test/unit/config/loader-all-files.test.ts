/** allFiles (RUNTIME_ROOT...): every non-dot file, in non-dot subdirectories too, as envoyproxy/ratelimit loads them. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../../src/config/index.js';

const dir = mkdtempSync(join(tmpdir(), 'rl-allfiles-'));
const rule = (domain: string) => `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n`;
for (const [name, domain] of [
  ['noext', 'd1'],
  ['sub/nested.yaml', 'd2'],
  ['.dot.yaml', 'd3'],
  ['..data/x.yaml', 'd4'],
  ['notes.yml', 'd5'],
  ['.hidden/y', 'd6'],
] as const) {
  mkdirSync(join(dir, name, '..'), { recursive: true });
  writeFileSync(join(dir, name), rule(domain));
}
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadConfigDir with allFiles', () => {
  it('loads every non-dot file, whatever its extension, in non-dot subdirectories too', async () => {
    const result = await loadConfigDir(dir, { mergeDomains: false, allFiles: true });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect([...result.config.domains.keys()].sort()).toEqual(['d1', 'd2', 'd5']);
    expect(result.config.files.map(String).sort()).toEqual(['noext', 'notes.yml', 'sub/nested.yaml']);
  });

  it('without it, only the *.yaml / *.yml files at the top level', async () => {
    const result = await loadConfigDir(dir, { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect([...result.config.domains.keys()]).toEqual(['d5']);
  });
});
