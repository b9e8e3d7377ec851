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

  // Behaviour these sentences state is tested where it lives (dropin-endpoints, reference-answers, cli tests);
  // here the pages must say it, and docs/responses.md must agree.
  it('states the measured differences, and responses.md agrees', () => {
    const responses = readFileSync(join(import.meta.dirname, '../../docs/responses.md'), 'utf8');
    const flat = (text: string) => text.replace(/\s+/g, ' ');
    expect(flat(PAGE)).toContain(
      'answers 200 while this replica runs (rules loaded, gRPC serving, not draining), whatever Redis does and in every `FAILURE_MODE`',
    );
    expect(flat(PAGE)).not.toMatch(/with `closed` it turns 500/);
    expect(flat(PAGE)).toContain('`RATELIMIT_HEADERS=none` with `RETRY_AFTER_HEADER=false` answers with no header at all');
    expect(flat(PAGE)).toContain('the limit that rejected it still counts the hits');
    expect(flat(PAGE)).toContain('set `DEBUG_PORT=6070` to keep `/rlconfig`');
    for (const page of [flat(PAGE), flat(responses)]) {
      expect(page).toContain('`dynamic_metadata`** is sent only with `RESPONSE_DYNAMIC_METADATA=true`');
      expect(page).toMatch(/a quota descriptor over its limit reads `OVER_LIMIT`|a quota-mode descriptor over its limit reads `OVER_LIMIT`/);
    }
  });
});
