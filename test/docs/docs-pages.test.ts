/**
 * The user docs describe the software: no issue numbers or talk of the work around the project, and the
 * performance page stays a results page (at most 300 lines).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const pages = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('user docs', () => {
  it.each(pages)('%s names no issue numbers', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    expect(text).not.toMatch(/\bissues? #?\d+|#\d{1,3}\b(?![\w-])/i);
  });

  it('docs/performance.md is a results page of at most 300 lines', () => {
    expect(readFileSync(join(ROOT, 'docs/performance.md'), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(300);
  });
});
