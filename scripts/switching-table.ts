/**
 * Prints the tables of docs/switching.md from src/compat/reference-settings.ts: every setting, endpoint,
 * metric and command of envoyproxy/ratelimit and what it is here. test/docs/switching-doc.test.ts fails when
 * the page's copy differs; refresh it with
 *   npx tsx scripts/switching-table.ts
 */
import { pathToFileURL } from 'node:url';
import { REFERENCE_CLI, REFERENCE_ENDPOINTS, REFERENCE_METRICS, REFERENCE_SETTINGS, type ReferenceStatus } from '../src/compat/reference-settings.js';

const STATUS: Record<ReferenceStatus, string> = {
  same: 'same',
  mapped: 'read',
  'no-op': 'nothing to do',
};

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function referenceSettingsTable(): string {
  const rows = REFERENCE_SETTINGS.map((s) => {
    const how = s.status === 'no-op' && s.fatal ? 'nothing to do (other values: start fails)' : STATUS[s.status];
    return `| \`${s.name}\` | \`${s.default === '' ? '""' : s.default}\` | ${how} | ${cell(s.here)} |`;
  });
  return ['| Reference setting | Its default | Here | Our equivalent, or what to do |', '|---|---|---|---|', ...rows].join('\n');
}

function pairs(head: [string, string], rows: readonly (readonly [string, string])[]): string {
  return [`| ${head[0]} | ${head[1]} |`, '|---|---|', ...rows.map(([a, b]) => `| ${cell(a)} | ${cell(b)} |`)].join('\n');
}

export function referenceEndpointsTable(): string {
  return pairs(['Reference endpoint', 'Here'], REFERENCE_ENDPOINTS);
}

export function referenceMetricsTable(): string {
  return pairs(['Reference stat', 'Our Prometheus metric'], REFERENCE_METRICS);
}

export function referenceCliTable(): string {
  return pairs(['Reference command', 'Here'], REFERENCE_CLI);
}

export function switchingTables(): string {
  return [
    '### Settings',
    '',
    referenceSettingsTable(),
    '',
    '### Endpoints',
    '',
    referenceEndpointsTable(),
    '',
    '### Metrics',
    '',
    referenceMetricsTable(),
    '',
    '### Commands',
    '',
    referenceCliTable(),
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(`${switchingTables()}\n`);
}
