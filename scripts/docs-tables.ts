/**
 * The settings and metrics tables of docs/settings.md and docs/metrics.md, generated from their single
 * declarations (src/settings/settings.ts, src/observability/metrics.ts). test/docs/readme.test.ts fails when a page's copy differs;
 * refresh both pages in place with
 *   npx tsx scripts/docs-tables.ts --write
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { createMetrics, type Metrics } from '../src/observability/metrics.js';
import { SETTINGS, defaultText, flagName } from '../src/settings/settings.js';

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function settingsTable(): string {
  const rows = Object.values(SETTINGS).map((s) => {
    return `| \`${s.env}\` | \`${flagName(s.env)}\` | ${cell(s.type)} | \`${defaultText(s)}\` | ${cell(s.description)} |`;
  });
  return ['| Env var | Flag | Type | Default | Meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** Every metric the service can export: the common ones and those of each store (read from the store at scrape time). */
export function everyMetric(options: { defaultMetrics: boolean }): Metrics {
  const metrics = createMetrics(options);
  metrics.watchRedis(() => ({ requests: 0, scriptCalls: 0, roundTrips: 0, crossSlotRequests: 0, failures: 0, expiredCalls: 0, lateCommits: 0 }));
  metrics.watchOverLimitCache(() => ({ hits: 0, entries: 0 }));
  metrics.watchMemory(() => ({ keys: 0, bytes: 0, protectedKeys: 0, expired: 0, evicted: 0, unstored: 0 }));
  metrics.watchLeases(() => ({ claims: 0, leased: 0, returned: 0, unused: 0, held: 0 }));
  metrics.watchGrpcConnections(() => ({ connections: 0, watches: 0 }));
  metrics.watchStoreReady(() => true);
  metrics.watchCapacity(() => []);
  metrics.capacityReport().watchResources(() => 0);
  metrics.watchCapacityRedis(() => ({ roundTrips: 0, fullReads: 0, retries: 0, fellBack: 0 }));
  metrics.watchDelayWaits(() => 0);
  metrics.watchXds(() => ({ state: 'connected', version: '', accepted: 0, refused: 0, repeatedNacks: 0, connects: 0 }));
  metrics.watchRlqs(() => new Map());
  return metrics;
}

export async function metricsTable(): Promise<string> {
  const metrics = everyMetric({ defaultMetrics: false });
  const all = await metrics.registry.getMetricsAsJSON();
  const rows = all.map((m) => {
    const labels = (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] }).labelNames ?? [];
    return `| \`${m.name}\` | ${String(m.type)} | ${labels.map((l) => `\`${l}\``).join(', ') || '—'} | ${cell(m.help)} |`;
  });
  return [
    '| Metric | Type | Labels | Meaning |',
    '|---|---|---|---|',
    ...rows,
    "| `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_heap_bytes`, `process_cpu_seconds_total`, `process_cpu_user_seconds_total`, `process_cpu_system_seconds_total`, `process_start_time_seconds`, `process_open_fds`, `process_max_fds` | gauge, counter | — | The process under the names every Prometheus client library exports them (dashboards written for any service, such as Envoy Gateway's, query these); read at scrape time. |",
    '| `ratelimit_process_*`, `ratelimit_nodejs_*` | (various) | — | Node.js process metrics (CPU, memory, event loop lag, GC, handles) from prom-client. The `ratelimit_nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds` gauges sample the loop once a second and show how late that sample ran, over the samples since the last scrape (a stall that holds no sample back is not seen there; the deadline margin samples it while calls come). |',
  ].join('\n');
}

/** Replaces the table that starts with `header` in the page (the first such block of `|` lines). */
export function replaceTable(page: string, table: string): string {
  const lines = page.split('\n');
  const header = table.split('\n')[0]!;
  const start = lines.indexOf(header);
  if (start < 0) throw new Error(`no table starting with ${header}`);
  let end = start;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  return [...lines.slice(0, start), table, ...lines.slice(end)].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--write')) {
    for (const [path, table] of [
      ['docs/settings.md', settingsTable()],
      ['docs/metrics.md', await metricsTable()],
    ] as const) {
      writeFileSync(path, replaceTable(readFileSync(path, 'utf8'), table));
    }
  } else {
    process.stdout.write(`${settingsTable()}\n\n${await metricsTable()}\n`);
  }
}
