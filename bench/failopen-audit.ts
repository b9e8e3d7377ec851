/**
 * The fail-open audit: for each event (bench/lib/failopen/rows.ts), through a real Envoy with the rate-limit filter
 * at failure_mode_deny: false, the requests Envoy let through without a decision and the admissions above the
 * limit, for this service and for envoyproxy/ratelimit under the same event. Prints the table; `--write` puts
 * it into docs/reliability.md.
 *
 *   npx tsx bench/failopen-audit.ts                 # every row, full durations (a few minutes)
 *   npx tsx bench/failopen-audit.ts --quick --parallel   # short durations, both servers at once (as the suite runs it)
 *   npx tsx bench/failopen-audit.ts --rows drain-redis,rapid-reset --json audit.json --write
 *   npm run bench -- --audit [same options]
 *
 * Needs Envoy (ENVOY_BIN or `envoy` on PATH), redis-server and envoyproxy/ratelimit (../shared/tools/envoy-ratelimit).
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './lib/args.js';
import { auditNotes, auditTable, holds, writeTable, type AuditLine } from './lib/failopen/report.js';
import { ROWS, runRow, type AuditRow } from './lib/failopen/rows.js';

export interface AuditOptions {
  quick: boolean;
  /** Row ids (default: all). */
  rows?: readonly string[];
  /** Run this service's and the reference's stacks of a row at the same time (half the time, more noise). */
  parallel?: boolean;
  /** Called after each row (progress). */
  onLine?: (line: AuditLine) => void;
}

export async function runAudit(o: AuditOptions): Promise<AuditLine[]> {
  const unknown = (o.rows ?? []).filter((id) => !ROWS.some((r) => r.id === id));
  if (unknown.length > 0) throw new Error(`unknown rows ${unknown.join(', ')}; rows: ${ROWS.map((r) => r.id).join(', ')}`);
  const rows: AuditRow[] = ROWS.filter((r) => o.rows === undefined || o.rows.includes(r.id));
  const lines: AuditLine[] = [];
  for (const row of rows) {
    const [ours, reference] = o.parallel
      ? await Promise.all([runRow(row, 'ours', o.quick), runRow(row, 'reference', o.quick)])
      : [await runRow(row, 'ours', o.quick), await runRow(row, 'reference', o.quick)];
    const line = { row, ours, reference };
    lines.push(line);
    o.onLine?.(line);
  }
  return lines;
}

async function main(argv: string[]): Promise<void> {
  const args = benchArgs('bench/failopen-audit.ts', { quick: 'flag', parallel: 'flag', rows: 'string', json: 'string', write: 'flag' }, argv);
  const opt = (name: 'rows' | 'json') => (args.has(name) ? args.str(name, '') : undefined);
  const quick = args.flag('quick');
  const parallel = args.flag('parallel');
  const rows = opt('rows')?.split(',');
  const t0 = Date.now();
  const lines = await runAudit({
    quick,
    parallel,
    ...(rows ? { rows } : {}),
    onLine: (l) =>
      process.stderr.write(`${l.row.id}: ours ${l.ours.noDecision}/${l.ours.overLimit}, reference ${l.reference.noDecision}/${l.reference.overLimit}\n`),
  });
  const table = auditTable(lines);
  const command = `npx tsx bench/failopen-audit.ts${quick ? ' --quick' : ''}${parallel ? ' --parallel' : ''}${rows ? ` --rows ${rows.join(',')}` : ''}`;
  console.log(`# ${command} (${((Date.now() - t0) / 1000).toFixed(0)} s)\n\n${table}\n`);
  for (const n of auditNotes(lines)) console.log(`- ${n}`);
  const failing = lines.filter((l) => !holds(l));
  console.log(
    failing.length === 0 ? '\nevery row: this service at or below the reference' : `\nabove the reference: ${failing.map((l) => l.row.id).join(', ')}`,
  );
  const json = opt('json');
  if (json !== undefined)
    writeFileSync(
      json,
      JSON.stringify(
        { date: new Date().toISOString(), quick, lines: lines.map((l) => ({ id: l.row.id, event: l.row.event, ours: l.ours, reference: l.reference })) },
        null,
        2,
      ),
    );
  if (args.flag('write')) writeTable(fileURLToPath(new URL('../docs/reliability.md', import.meta.url)), table, command);
  process.exitCode = failing.length === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main(process.argv.slice(2));

export { main as auditMain };
