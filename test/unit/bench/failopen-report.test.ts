/**
 * The fail-open audit's table in docs/reliability.md (bench/lib/failopen/report.ts): written between its markers
 * only, and listing every row the audit runs (a new row means a new run with --write).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditTable, BEGIN, END, holds, writeTable, type AuditLine } from '../../../bench/lib/failopen/report.js';
import { ROWS } from '../../../bench/lib/failopen/rows.js';

const result = (noDecision: number, overLimit: number) => ({ noDecision, errors: noDecision, overLimit, probes: 10, notes: [] });

describe('fail-open audit report', () => {
  it('replaces only the text between the markers, and refuses a page without them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-report-'));
    try {
      const file = join(dir, 'page.md');
      writeFileSync(file, `before\n${BEGIN}\nold table\n${END}\nafter\n`);
      writeTable(file, '| new |', 'cmd');
      writeTable(file, '| newer |', 'cmd');
      expect(readFileSync(file, 'utf8')).toBe(`before\n${BEGIN}\n\n\`cmd\`:\n\n| newer |\n\n${END}\nafter\n`);
      writeFileSync(file, 'no markers\n');
      expect(() => writeTable(file, '| x |', 'cmd')).toThrow(/no .* section/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a row holds when this service is at or below the reference in both counts', () => {
    const row = ROWS.find((r) => r.store === 'memory')!;
    const line = (ours: [number, number], reference: [number, number]): AuditLine => ({ row, ours: result(...ours), reference: result(...reference) });
    expect(holds(line([0, 0], [0, 0]))).toBe(true);
    expect(holds(line([3, 2], [3, 2]))).toBe(true);
    expect(holds(line([1, 0], [0, 0]))).toBe(false);
    expect(holds(line([0, 1], [5, 0]))).toBe(false);
    expect(auditTable([line([1, 2], [3, 4])])).toContain(`| ${row.event} | memory (reference: Redis, it has no memory backend) | 1 | 2 | 3 | 4 |`);
  });

  it('docs/reliability.md has the generated table with every row of the audit', () => {
    const text = readFileSync(join(import.meta.dirname, '../../../docs/reliability.md'), 'utf8');
    const section = text.slice(text.indexOf(BEGIN), text.indexOf(END));
    expect(section.length).toBeGreaterThan(BEGIN.length);
    for (const row of ROWS) expect(section, row.id).toContain(`| ${row.event} |`);
  });
});
