/**
 * A rules file shown in the docs must paste as-is: every ```yaml block of README.md and docs/*.md that is a
 * rules file (a top-level `domain:` or `descriptors:`) is written to its own directory and loaded with the real
 * loader (what `ratelimit check` runs). A block that is deliberately part of a file says so, either with the
 * fence info string ```yaml fragment or with a first line `# fragment of <where it goes>`; it is not loaded.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfigDir } from '../../src/config/index.js';

const ROOT = join(import.meta.dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

interface Snippet {
  readonly where: string;
  readonly text: string;
  readonly fragment: boolean;
}

/** The ```yaml blocks of a page, with the line each starts on. */
export function yamlBlocks(page: string, text: string): Snippet[] {
  const out: Snippet[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    const body = lines.slice(i + 1, end < 0 ? lines.length : end);
    if (open[1] === 'yaml') {
      const fragment = open[2] === 'fragment' || /^# fragment of /.test(body[0] ?? '');
      out.push({ where: `${page}:${i + 1}`, text: body.join('\n') + '\n', fragment });
    }
    i = end < 0 ? lines.length : end;
  }
  return out;
}

const isRulesFile = (s: Snippet) => /^(domain|descriptors):/m.test(s.text);
/** A piece of a rules file: it starts with a descriptor entry or a `rate_limit:` block. */
const isRulesPiece = (s: Snippet) => /^(\s*- key:|rate_limit:)/.test(s.text.replace(/^#.*\n/, ''));

const blocks = PAGES.flatMap((page) => yamlBlocks(page, readFileSync(join(ROOT, page), 'utf8')));
const snippets = blocks.filter(isRulesFile);
const whole = snippets.filter((s) => !s.fragment);
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('YAML rules files in the docs', () => {
  it('are found (README and docs/ show rules files)', () => {
    expect(whole.length).toBeGreaterThanOrEqual(20);
  });

  it.each(whole.map((s) => [s.where, s] as const))('%s loads with the real loader', async (_where, snippet) => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-snippet-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'rules.yaml'), snippet.text);
    const result = await loadConfigDir(dir, { mergeDomains: false });
    expect(result.ok ? [] : result.errors.map(String), snippet.text).toEqual([]);
  });

  it('mark every piece of a rules file as a fragment', () => {
    const unmarked = blocks.filter((b) => !isRulesFile(b) && isRulesPiece(b) && !b.fragment).map((b) => b.where);
    expect(unmarked).toEqual([]);
  });

  it('mark fragments so that the reader knows to complete them', () => {
    // A fragment is a rules-file piece without its domain; one with `domain:` should be whole.
    for (const s of snippets.filter((f) => f.fragment)) expect(/^domain:/m.test(s.text), s.where).toBe(false);
  });

  it('fail to load a snippet missing its domain or holding a placeholder (the check can fail)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'docs-snippet-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'rules.yaml'), 'descriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 5}\n');
    expect((await loadConfigDir(dir, { mergeDomains: false })).ok).toBe(false);
    writeFileSync(join(dir, 'rules.yaml'), 'domain: a\ndescriptors: [...]\n');
    expect((await loadConfigDir(dir, { mergeDomains: false })).ok).toBe(false);
  });
});
