/** docs/switching.md carries the mapping tables generated from src/compat/reference-settings.ts, verbatim. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { switchingTables } from '../../scripts/switching-table.js';

const PAGE = readFileSync(join(import.meta.dirname, '../../docs/switching.md'), 'utf8');

describe('docs/switching.md', () => {
  it('has the generated mapping of every reference setting, endpoint, metric and command (npx tsx scripts/switching-table.ts)', () => {
    expect(PAGE).toContain(switchingTables());
  });
});
