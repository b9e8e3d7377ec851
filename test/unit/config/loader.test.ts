/** loadConfigDir against real directories: selection, order, symlinks (ConfigMap layout), failures. */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfigDir, readConfigFiles } from '../../../src/config/index.js';
import { ConfigMapDir, tempDir } from './fs-helpers.js';

const rule = (domain: string): string => `domain: ${domain}\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n`;

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadConfigDir', () => {
  it('loads *.yaml and *.yml at the top level, sorted by name, skipping hidden and other files', async () => {
    await writeFile(join(dir, 'b.yaml'), rule('b'));
    await writeFile(join(dir, 'a.yml'), rule('a'));
    await writeFile(join(dir, 'C.YAML'), rule('c'));
    await writeFile(join(dir, 'notes.txt'), 'not yaml');
    await writeFile(join(dir, '.b.yaml.swp'), 'editor junk');
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'deep.yaml'), rule('deep'));
    await mkdir(join(dir, 'dir.yaml'));
    const result = await loadConfigDir(dir, { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.files).toEqual(['C.YAML', 'a.yml', 'b.yaml']);
    expect([...result.config.domains.keys()].sort()).toEqual(['a', 'b', 'c']);
  });

  it('reads a Kubernetes ConfigMap mount through its symlinks, ignoring ..data and the timestamp dirs', async () => {
    const cm = new ConfigMapDir(dir);
    await cm.update({ 'edge.yaml': rule('edge'), 'api.yaml': rule('api') });
    await cm.update({ 'edge.yaml': rule('edge2'), 'api.yaml': rule('api') });
    const result = await loadConfigDir(dir, { mergeDomains: false });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.files).toEqual(['api.yaml', 'edge.yaml']);
    expect([...result.config.domains.keys()].sort()).toEqual(['api', 'edge2']);
  });

  it('fails on a directory without any rules file: empty, only dot files, or only other names (no silent 0 domains)', async () => {
    const errorsOf = async (allFiles = false) => {
      const result = await loadConfigDir(dir, { mergeDomains: false, allFiles });
      return result.ok ? [] : result.errors.map(String);
    };
    expect(await errorsOf()).toEqual([`${dir}:1:1: no rules file: the rules directory holds no *.yaml or *.yml file (it is empty)`]);
    expect(await errorsOf(true)).toEqual([`${dir}:1:1: no rules file: the rules directory holds no non-dot file (it is empty)`]);
    await writeFile(join(dir, '.hidden.yaml'), rule('h'));
    expect(await errorsOf()).toEqual([
      `${dir}:1:1: no rules file: the rules directory holds no *.yaml or *.yml file (it holds only dot files, which are skipped)`,
    ]);
    await writeFile(join(dir, 'rules.json'), '{"domain": "j"}');
    await writeFile(join(dir, 'rules'), rule('r'));
    expect(await errorsOf()).toEqual([
      `${dir}:1:1: no rules file: the rules directory holds no *.yaml or *.yml file (ignored: rules, rules.json); rules files end in .yaml or .yml (CONFIG_ALL_FILES=true reads every file whatever its extension)`,
    ]);
    // A domain without descriptors is the way to load no limits on purpose.
    await writeFile(join(dir, 'none.yaml'), 'domain: none\n');
    expect(await errorsOf()).toEqual([]);
  });

  it('names unreadable files (dangling and looping links) and still validates the others', async () => {
    await symlink(join(dir, 'gone.yaml'), join(dir, 'dangling.yaml'));
    await symlink(join(dir, 'loop.yaml'), join(dir, 'loop.yaml'));
    await writeFile(join(dir, 'z.yaml'), 'domain: z\nfoo: 1\n');
    const result = await loadConfigDir(dir, { mergeDomains: false });
    expect(result.ok).toBe(false);
    const messages = result.ok ? [] : result.errors.map(String);
    expect(messages).toHaveLength(3);
    expect(messages[0]).toMatch(/^dangling\.yaml:1:1: cannot read file: ENOENT/);
    expect(messages[1]).toMatch(/^loop\.yaml:1:1: cannot read file: ELOOP/);
    expect(messages[2]).toBe("z.yaml:2:1: foo: unknown key 'foo'; valid keys here: domain, descriptors, defaults, authz, valid_from, valid_until");
  });

  it('reports a missing directory', async () => {
    const missing = join(dir, 'nope');
    const result = await loadConfigDir(missing, { mergeDomains: false });
    expect(result.ok ? [] : result.errors.map(String)).toEqual([`${missing}:1:1: the rules directory does not exist`]);
  });

  it('reports file names relative to the directory', async () => {
    await writeFile(join(dir, 'bad.yaml'), 'domain: ""\n');
    const result = await loadConfigDir(dir, { mergeDomains: false });
    expect(result.ok ? [] : result.errors.map((e) => e.file)).toEqual(['bad.yaml']);
  });

  it('reads files as they are (bytes in, same text out)', async () => {
    await writeFile(join(dir, 'u.yaml'), 'domain: "ü ✓"\n');
    const { files } = await readConfigFiles(dir);
    expect(files).toEqual([{ name: 'u.yaml', text: 'domain: "ü ✓"\n' }]);
  });
});
