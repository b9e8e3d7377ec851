/**
 * What the loader refuses to read: symlinks leading out of the config directory (their content must
 * never be echoed), files that are not UTF-8, files over the size limit; and the `allFiles` selection of
 * envoyproxy/ratelimit's runtime directory.
 */
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfigDir, loadConfigDirInWorker, readConfigFiles } from '../../../src/config/index.js';
import { fingerprintConfigDir, fingerprintConfigDirSync } from '../../../src/config/load/watcher.js';
import { ConfigMapDir, tempDir } from './fs-helpers.js';

const rule = (domain: string): string => `domain: ${domain}\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n`;

let root: string;
let dir: string;
let outside: string;
beforeEach(async () => {
  root = await tempDir();
  dir = join(root, 'config');
  outside = join(root, 'secrets');
  await mkdir(dir);
  await mkdir(outside);
  // What an attacker would like echoed: a YAML error quotes the line, a type error names 'the string ...'.
  await writeFile(join(outside, 'shadow.yaml'), 'root:SECRET-HASH:19000:0:99999:7:::\n');
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function messages(result: Awaited<ReturnType<typeof loadConfigDir>>): string[] {
  return result.ok ? [] : result.errors.map(String);
}

describe('symlinks out of the config directory', () => {
  it('refuses a link to a file outside, naming the link, never its content', async () => {
    await symlink(join(outside, 'shadow.yaml'), join(dir, 'a.yaml'));
    await writeFile(join(dir, 'b.yaml'), rule('b'));
    const result = await loadConfigDir(dir, { mergeDomains: false });
    expect(messages(result)).toEqual([
      'a.yaml:1:1: refused: a symbolic link whose target is outside the config directory (only files inside CONFIG_DIR are read)',
    ]);
    expect(JSON.stringify(messages(result))).not.toContain('SECRET');
  });

  it('refuses a relative link climbing out, and a ConfigMap-like ..data link that points outside', async () => {
    await symlink('../secrets/shadow.yaml', join(dir, 'rel.yaml'));
    await symlink(outside, join(dir, '..data'));
    await symlink(join('..data', 'shadow.yaml'), join(dir, 'via-data.yaml'));
    const { files, errors } = await readConfigFiles(dir);
    expect(files).toEqual([]);
    expect(errors.map((e) => e.file)).toEqual(['rel.yaml', 'via-data.yaml']);
    expect(errors.map(String).join('\n')).not.toContain('SECRET');
  });

  it('keeps reading ConfigMap links (edge.yaml → ..data/edge.yaml → ..<ts>/edge.yaml) and links within the directory', async () => {
    const cm = new ConfigMapDir(dir);
    await cm.update({ 'edge.yaml': rule('edge') });
    await symlink('edge.yaml', join(dir, 'same.yml'));
    const { files, errors } = await readConfigFiles(dir);
    expect(errors).toEqual([]);
    expect(files.map((f) => f.name)).toEqual(['edge.yaml', 'same.yml']);
  });

  it('works when CONFIG_DIR itself is reached through a symlink', async () => {
    await writeFile(join(dir, 'a.yaml'), rule('a'));
    await symlink(dir, join(root, 'link-to-config'));
    const result = await loadConfigDir(join(root, 'link-to-config'), { mergeDomains: false });
    expect(result.ok && [...result.config.domains.keys()]).toEqual(['a']);
  });
});

describe('encoding and size', () => {
  it('rejects invalid UTF-8 with the line and column of the first bad byte (not a silent U+FFFD)', async () => {
    await writeFile(join(dir, 'latin1.yaml'), Buffer.concat([Buffer.from('domain: d\ndescriptors:\n  - key: caf'), Buffer.from([0xe9]), Buffer.from('\n')]));
    await writeFile(join(dir, 'overlong.yaml'), Buffer.concat([Buffer.from('domain: é'), Buffer.from([0xc0, 0xaf]), Buffer.from('\n')]));
    const result = await loadConfigDir(dir, { mergeDomains: false });
    expect(messages(result)).toEqual([
      'latin1.yaml:3:13: invalid UTF-8 (byte 0xE9); rules files must be UTF-8',
      'overlong.yaml:1:10: invalid UTF-8 (byte 0xC0); rules files must be UTF-8',
    ]);
  });

  it('keeps valid UTF-8 (and a byte order mark) as it is', async () => {
    await writeFile(join(dir, 'u.yaml'), '\uFEFFdomain: "ü ✓ 𝄞"\n');
    const { files, errors } = await readConfigFiles(dir);
    expect(errors).toEqual([]);
    expect(files).toEqual([{ name: 'u.yaml', text: '\uFEFFdomain: "ü ✓ 𝄞"\n' }]);
  });

  it('refuses a file over maxFileBytes without reading it', async () => {
    await writeFile(join(dir, 'big.yaml'), `${rule('big')}# ${'x'.repeat(5000)}\n`);
    await writeFile(join(dir, 'small.yaml'), rule('small'));
    const result = await loadConfigDir(dir, { mergeDomains: false, maxFileBytes: 4096 });
    expect(messages(result)).toEqual(['big.yaml:1:1: file is 5091 bytes, more than the limit of 4096 (CONFIG_MAX_FILE_BYTES)']);
  });

  it('accepts a file over the default size when maxFileBytes is raised, at start as on reload', async () => {
    const text = `${rule('big')}# ${'x'.repeat(1024 * 1024)}\n`;
    await writeFile(join(dir, 'big.yaml'), text);
    const options = { mergeDomains: false, maxFileBytes: 2 * 1024 * 1024 };
    const initial = await loadConfigDir(dir, options);
    expect(messages(initial)).toEqual([]);
    const reloaded = await loadConfigDirInWorker(dir, { ...options, timeoutMs: 30_000 });
    expect(messages(reloaded)).toEqual([]);
    if (!initial.ok || !reloaded.ok) throw new Error('a load failed (its messages are above)');
    expect(initial.config.version).toBe(reloaded.config.version);
  });
});

describe('allFiles (envoyproxy/ratelimit runtime directory)', () => {
  it('loads every regular non-hidden file whatever its extension; the default stays *.yaml/*.yml', async () => {
    await writeFile(join(dir, 'a.yaml'), rule('a'));
    await writeFile(join(dir, 'b.conf'), rule('b'));
    await writeFile(join(dir, 'c'), rule('c'));
    await writeFile(join(dir, '.hidden'), 'not: rules');
    await mkdir(join(dir, 'sub'));
    const all = await loadConfigDir(dir, { mergeDomains: false, allFiles: true });
    expect(all.ok && all.config.files).toEqual(['a.yaml', 'b.conf', 'c']);
    const yamlOnly = await loadConfigDir(dir, { mergeDomains: false });
    expect(yamlOnly.ok && yamlOnly.config.files).toEqual(['a.yaml']);
  });
});

describe('the watcher fingerprint follows the same rules', () => {
  it('agrees sync and async on refused files (no spurious reload), and sees non-YAML files with allFiles', async () => {
    await symlink(join(outside, 'shadow.yaml'), join(dir, 'a.yaml'));
    await writeFile(join(dir, 'b.yaml'), Buffer.from([0x64, 0xff, 0x0a]));
    await writeFile(join(dir, 'c.yaml'), `${rule('c')}# ${'x'.repeat(200)}\n`);
    await writeFile(join(dir, 'd.conf'), rule('d'));
    for (const options of [{ maxFileBytes: 100 }, { allFiles: true }]) {
      expect(fingerprintConfigDirSync(dir, options)).toBe(await fingerprintConfigDir(dir, options));
    }
    const before = await fingerprintConfigDir(dir, { allFiles: true });
    const yamlOnly = await fingerprintConfigDir(dir);
    await writeFile(join(dir, 'd.conf'), rule('d2'));
    expect(await fingerprintConfigDir(dir, { allFiles: true })).not.toBe(before);
    expect(await fingerprintConfigDir(dir)).toBe(yamlOnly);
  });

  it('agrees sync and async on the files of subdirectories with allFiles', async () => {
    await writeFile(join(dir, 'a.yaml'), rule('a'));
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'sub', 'b.conf'), rule('b'));
    expect(fingerprintConfigDirSync(dir, { allFiles: true })).toBe(await fingerprintConfigDir(dir, { allFiles: true }));
  });
});
