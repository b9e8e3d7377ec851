/**
 * Every Envoy config the repository ships passes Envoy's own `--mode validate`: the files
 * (envoy.yaml, envoy-ext-authz.yaml, the Kubernetes copies, and any other YAML file with `static_resources`),
 * and every fenced YAML block in docs/ and README.md that is a whole bootstrap.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { describeEnvoy, validateEnvoyConfig } from '../support/envoy.js';

const ROOT = join(import.meta.dirname, '../..');
const SKIP_DIRS = new Set(['node_modules', '.git', 'dist', 'coverage']);
/** Top-level fields of a v3 Bootstrap that only a whole config has. */
const BOOTSTRAP_FIELDS = ['static_resources', 'dynamic_resources'];

function files(dir: string, keep: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...files(join(dir, entry.name), keep));
    } else if (keep(entry.name)) {
      out.push(join(dir, entry.name));
    }
  }
  return out.sort();
}

/** Fenced ```yaml / ```yml blocks of a Markdown text, with the line each starts on. */
function yamlBlocks(markdown: string): { line: number; text: string }[] {
  const blocks: { line: number; text: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(ya?ml)\b/.exec(lines[i] as string);
    if (!open) continue;
    const fence = open[2] as string;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !(lines[j] as string).trim().startsWith(fence); j++) body.push((lines[j] as string).slice((open[1] as string).length));
    blocks.push({ line: i + 1, text: body.join('\n') });
    i = j;
  }
  return blocks;
}

function isWholeConfig(text: string): boolean {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch {
    return false; // a fragment that is not YAML on its own (e.g. with `...`): not a whole config
  }
  return doc !== null && typeof doc === 'object' && !Array.isArray(doc) && BOOTSTRAP_FIELDS.some((f) => f in doc);
}

const shippedFiles = files(ROOT, (n) => /\.ya?ml$/.test(n)).filter(
  (f) => !relative(ROOT, f).startsWith('test/') && /^static_resources:/m.test(readFileSync(f, 'utf8')),
);
const docBlocks = files(ROOT, (n) => n.endsWith('.md'))
  .filter((f) => !relative(ROOT, f).startsWith('test/'))
  .flatMap((f) =>
    yamlBlocks(readFileSync(f, 'utf8'))
      .filter((b) => isWholeConfig(b.text))
      .map((b) => ({ where: `${relative(ROOT, f)}:${b.line}`, text: b.text })),
  );

const dir = mkdtempSync(join(tmpdir(), 'rl-envoy-validate-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('finds the shipped configs and whole-config blocks in Markdown', () => {
  expect(shippedFiles.map((f) => relative(ROOT, f))).toEqual(
    expect.arrayContaining(['envoy.yaml', 'envoy-ext-authz.yaml', 'deploy/k8s/base/envoy.yaml', 'deploy/k8s/ext-authz/envoy-ext-authz.yaml']),
  );
  const md = ['text', '```yaml', 'static_resources: {}', '```', '', '  ```yml', '  http_filters: []', '  ```', '```yaml', 'admin: {', '```'].join('\n');
  expect(yamlBlocks(md)).toEqual([
    { line: 2, text: 'static_resources: {}' },
    { line: 6, text: 'http_filters: []' },
    { line: 9, text: 'admin: {' },
  ]);
  expect(yamlBlocks(md).map((b) => isWholeConfig(b.text))).toEqual([true, false, false]);
});

describeEnvoy('envoy --mode validate', () => {
  it.each(shippedFiles.map((f) => [relative(ROOT, f), f]))('accepts %s', (_name, file) => {
    const { ok, output } = validateEnvoyConfig(file);
    expect(ok, output).toBe(true);
  });

  it.each(docBlocks.map((b) => [b.where, b.text]))('accepts the config in %s', (where, text) => {
    const file = join(dir, `${where.replace(/[/:]/g, '_')}.yaml`);
    writeFileSync(file, text);
    const { ok, output } = validateEnvoyConfig(file);
    expect(ok, `${where}:\n${output}`).toBe(true);
  });

  it('refuses what Envoy refuses (so the checks above can fail)', () => {
    const file = join(dir, 'typo.yaml');
    writeFileSync(file, readFileSync(join(ROOT, 'envoy.yaml'), 'utf8').replace('failure_mode_deny: false', 'failure_mode_denied: false'));
    const { ok, output } = validateEnvoyConfig(file);
    expect(ok).toBe(false);
    expect(output).toContain('failure_mode_denied');
  });
});
