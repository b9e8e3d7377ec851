/**
 * Prints the README's settings and metrics tables from their single declarations (src/settings.ts,
 * src/metrics.ts). test/unit/readme.test.ts fails when the README's copy differs; refresh it with
 *   npx tsx scripts/docs-tables.ts
 */
import { pathToFileURL } from 'node:url';
import { createMetrics } from '../src/metrics.js';
import { SETTINGS, flagName } from '../src/settings.js';

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function settingsTable(): string {
  const rows = Object.values(SETTINGS).map((s) => {
    const def = Array.isArray(s.default) ? (s.default.length === 0 ? '(none)' : s.default.join(',')) : String(s.default);
    return `| \`${s.env}\` | \`${flagName(s.env)}\` | ${s.type} | \`${def === '' ? '""' : def}\` | ${cell(s.description)} |`;
  });
  return ['| Env var | Flag | Type | Default | Meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

export async function metricsTable(): Promise<string> {
  const metrics = createMetrics({ defaultMetrics: false });
  // Register the store-specific metrics too (with BACKEND=redis they read the store's own counters).
  metrics.watchRedis(() => ({ requests: 0, scriptCalls: 0, roundTrips: 0, crossSlotRequests: 0, failures: 0, expiredCalls: 0, lateCommits: 0 }));
  metrics.watchOverLimitCache(() => ({ hits: 0, entries: 0 }));
  const all = await metrics.registry.getMetricsAsJSON();
  const rows = all.map((m) => {
    const labels = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
    return `| \`${m.name}\` | ${String(m.type)} | ${labels.map((l) => `\`${l}\``).join(', ') || '—'} | ${cell(m.help)} |`;
  });
  return ['| Metric | Type | Labels | Meaning |', '|---|---|---|---|', ...rows, '| `ratelimit_process_*`, `ratelimit_nodejs_*` | (various) | — | Node.js process metrics (CPU, memory, event loop lag, GC, handles) from prom-client. |'].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(`${settingsTable()}\n\n${await metricsTable()}\n`);
}
