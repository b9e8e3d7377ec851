/**
 * The README is the front door and docs/ the manual: the settings and metrics tables must be the declared
 * ones, verbatim, and every link between the pages must land on a file and a heading that exist.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metricsTable, settingsTable } from '../../scripts/docs-tables.js';

const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Headings outside code fences. */
function headings(text: string): string[] {
  let fenced = false;
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.+)$/.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}

const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[`'"().,:/×÷]/g, '')
    .trim()
    .replace(/\s+/g, '-');

describe('README and docs/', () => {
  it('list every setting as declared in src/settings/settings.ts (npx tsx scripts/docs-tables.ts)', () => {
    expect(read('docs/settings.md')).toContain(settingsTable());
  });

  it('render every settings row with its five cells, and no default as "undefined"', () => {
    const rows = settingsTable().split('\n').slice(2);
    for (const row of rows) {
      // An unescaped `|` (e.g. in a type written `true | false`) would split a cell in two.
      expect(row.split(/(?<!\\)\|/).length - 2, row).toBe(5);
      expect(row, row).not.toContain('`undefined`');
    }
  });

  it('list every metric as declared in src/observability/metrics.ts', async () => {
    expect(read('docs/metrics.md')).toContain(await metricsTable());
  });

  it('give the two commands that set up and run everything', () => {
    expect(read('README.md')).toContain('npm ci && npm start');
    expect(read('README.md')).toContain('npm ci && npm test');
  });

  it.each(PAGES)('%s links only to files and headings that exist', (page) => {
    const text = read(page);
    const links = [...text.matchAll(/\]\(((?!https?:)[^)\s]+)\)/g)].map((m) => m[1]!);
    for (const link of links) {
      const [path, anchor] = link.split('#') as [string, string | undefined];
      const target = path === '' ? page : join(dirname(page), path);
      expect(existsSync(join(ROOT, target)), `${page}: ${link}`).toBe(true);
      if (anchor !== undefined && target.endsWith('.md')) {
        expect(headings(read(target)).map(anchorOf), `${page}: ${link}`).toContain(anchor);
      }
    }
  });

  it.each(PAGES)('%s has no two headings with the same text (their anchors would clash)', (page) => {
    const all = headings(read(page));
    expect(all.filter((h, i) => all.indexOf(h) !== i)).toEqual([]);
  });
});
