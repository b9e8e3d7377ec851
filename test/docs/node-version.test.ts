/**
 * One Node everywhere: package.json `config.node` pins it; the image's base, `engines`, `@types/node`, the npm
 * scripts (suite, start, benchmarks, demo), .ci/run and the docs all name or take the same one, and this suite
 * runs on it.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheDir, findNode, NODE_VERSION } from '../../scripts/node/run.mjs';

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  config: { node: string };
  engines: { node: string };
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};
const PIN = pkg.config.node;
const MAJOR = PIN.split('.')[0]!;

describe('the pinned Node', () => {
  it('is an exact release of an even (LTS) line from 24 on, and the launcher reads it from package.json', () => {
    expect(PIN).toMatch(/^\d+\.\d+\.\d+$/);
    expect(Number(MAJOR) % 2).toBe(0);
    expect(Number(MAJOR)).toBeGreaterThanOrEqual(24);
    expect(NODE_VERSION).toBe(PIN);
  });

  it('runs this suite', () => {
    expect(process.version).toBe(`v${PIN}`);
  });

  it('is the base image of both stages of the Dockerfile', () => {
    const dockerfile = read('Dockerfile');
    expect(/^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1]).toBe(PIN);
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(froms).toEqual(['node:${NODE_VERSION}-bookworm-slim', 'node:${NODE_VERSION}-bookworm-slim']);
  });

  it('is what engines and @types/node say is supported', () => {
    expect(pkg.engines.node).toBe(`>=${PIN}`);
    expect(pkg.devDependencies['@types/node']).toMatch(new RegExp(`^\\^${MAJOR}\\.`));
  });

  it('runs the suite, the service, the benchmarks and the demo from npm, and everything in .ci/run', () => {
    for (const name of ['test', 'start', 'bench', 'soak', 'demo'])
      expect({ name, script: pkg.scripts[name] }).toEqual({ name, script: expect.stringContaining('node scripts/node/run.mjs ') as string });
    const ci = read('.ci/run');
    const pinned = ci.indexOf('scripts/node/run.mjs --print-path');
    expect(pinned).toBeGreaterThan(0);
    expect(ci.indexOf('\nnpm ci ')).toBeGreaterThan(pinned);
    expect(ci).toMatch(/export NODE_BIN PATH="\$\(dirname "\$NODE_BIN"\):\$PATH"/);
  });

  it('is every Node version the README and docs name', () => {
    const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.md'))
      .map((e) => relative(ROOT, join(e.parentPath, e.name)));
    const mentions = ['README.md', ...docs].flatMap((f) =>
      [...read(f).matchAll(/\bNode(?:\.js)? (\d+)(?:\.(\d+)\.(\d+))?|node:(\d+\.\d+\.\d+)/g)].map((m) => ({
        file: f,
        version: m[4] ?? (m[2] === undefined ? m[1] : `${m[1]}.${m[2]}.${m[3]}`),
      })),
    );
    expect(mentions.length).toBeGreaterThan(0);
    expect(mentions).toEqual(mentions.map((m) => ({ ...m, version: m.version!.includes('.') ? PIN : MAJOR })));
  });
});

describe('scripts/node/run.mjs', () => {
  const launcher = join(ROOT, 'scripts/node/run.mjs');

  it('finds the pinned Node without installing, and prints its path', () => {
    expect(findNode()).toBeDefined();
    const out = spawnSync(process.execPath, [launcher, '--print-path'], { encoding: 'utf8' });
    expect(out.status).toBe(0);
    expect(spawnSync(out.stdout.trim(), ['--version'], { encoding: 'utf8' }).stdout.trim()).toBe(`v${PIN}`);
  });

  it('runs a command with the pinned Node first on PATH and hands back its exit code', () => {
    const out = spawnSync(process.execPath, [launcher, 'sh', '-c', 'node --version; exit 3'], { encoding: 'utf8' });
    expect({ status: out.status, stdout: out.stdout.trim() }).toEqual({ status: 3, stdout: `v${PIN}` });
  });

  it('refuses a NODE_BIN of another version, naming it', () => {
    const out = spawnSync(process.execPath, [launcher, '--print-path'], { encoding: 'utf8', env: { ...process.env, NODE_BIN: '/bin/true' } });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain(`NODE_BIN=/bin/true is not a working node, not the pinned ${PIN} (package.json config.node)`);
  });

  it('keeps its install under the cache directory, per version', () => {
    const home = mkdtempSync(join(tmpdir(), 'home-'));
    expect(cacheDir({ HOME: home })).toBe(join(home, '.cache/ratelimit-sidecar', `node-${PIN}`));
    expect(cacheDir({ HOME: home, XDG_CACHE_HOME: '/c' })).toBe(`/c/ratelimit-sidecar/node-${PIN}`);
  });
});
