/** The README is the manual: its settings and metrics tables must be the declared ones, verbatim. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { metricsTable, settingsTable } from '../../scripts/docs-tables.js';

const ROOT = join(import.meta.dirname, '../..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  it('lists every setting as declared in src/settings.ts (npx tsx scripts/docs-tables.ts)', () => {
    expect(README).toContain(settingsTable());
  });

  it('lists every metric as declared in src/metrics.ts', async () => {
    expect(README).toContain(await metricsTable());
  });

  it('gives the two commands that set up and run everything', () => {
    expect(README).toContain('npm ci && npm start');
    expect(README).toContain('npm ci && npm test');
  });

  it('links only to files that exist', () => {
    const links = [...README.matchAll(/\]\(((?!https?:|#)[^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(3);
    for (const link of links) expect(existsSync(join(ROOT, link)), link).toBe(true);
  });

  it('has no two headings with the same text (their anchors would clash)', () => {
    const headings = [...README.matchAll(/^#{2,6} (.+)$/gm)].map((m) => m[1]!);
    expect(headings.filter((h, i) => headings.indexOf(h) !== i)).toEqual([]);
  });

  it('has an anchor for every internal link', () => {
    const anchors = new Set(
      [...README.matchAll(/^#{2,6} (.+)$/gm)].map((m) =>
        m[1]!.toLowerCase().replace(/[`'"().,:/×÷]/g, '').trim().replace(/\s+/g, '-'),
      ),
    );
    for (const m of README.matchAll(/\]\(#([^)]+)\)/g)) expect(anchors.has(m[1]!), m[1]).toBe(true);
  });
});
