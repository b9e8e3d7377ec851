/**
 * The admin port's status page (GET /): what an operator needs in an incident on one server-rendered page.
 * Plain HTML with its style inline, no script and no external asset (the Content-Security-Policy forbids
 * both), readable in a terminal browser, refreshing itself with a meta refresh. Every value goes through
 * `esc`: descriptor values come from clients, and a value like `<script>` must show as text. The JSON
 * endpoints (/rules, /top, /rlqs, /capacity) stay the API; this page only shows them.
 */
import type { ConfigDescription } from '../../config/compile/describe-rules.js';
import type { TopKey, TopSnapshot } from '../../top/top-keys.js';

export interface StatusPageData {
  readonly version: string;
  readonly now: Date;
  readonly refreshSeconds: number;
  readonly store: { readonly backend: string; readonly healthy: boolean; readonly problem?: string | undefined };
  readonly readiness: { readonly ready: boolean; readonly reason?: string | undefined };
  /** GET /rules: version, files, lastReload, domains, and `source` when the rules come over xDS. */
  readonly rules: {
    readonly version: string;
    readonly source?: unknown;
    readonly lastReload: { readonly at: string; readonly ok: boolean; readonly errors: readonly string[]; readonly warnings: readonly string[] };
    readonly domains: ConfigDescription;
  };
  readonly top?: TopSnapshot | undefined;
  readonly rlqs?: unknown;
  readonly capacity?: unknown;
}

/** Rules listed on the page; beyond, the page says how many more /rules holds. */
const MAX_RULES_SHOWN = 200;

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text made safe for HTML element content and quoted attributes. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The Content-Security-Policy the page is served with: inline style only, nothing fetched, nothing run. */
export const STATUS_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const STYLE = `body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#111}table{border-collapse:collapse;margin:.3em 0 1em}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}
.bad{color:#b00020;font-weight:bold}.ok{color:#106010;font-weight:bold}code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:20em}`;

export function renderStatusPage(d: StatusPageData): string {
  const parts = [
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="${d.refreshSeconds}">`,
    `<title>ratelimit-sidecar status</title><style>${STYLE}</style></head><body>`,
    `<h1>ratelimit-sidecar ${esc(d.version)}</h1>`,
    `<p>${esc(d.now.toISOString())}; this page refreshes every ${d.refreshSeconds} s. JSON: <a href="/rules">/rules</a> <a href="/top">/top</a> <a href="/metrics">/metrics</a></p>`,
    health(d),
    top(d.top),
    rules(d.rules),
    d.rules.source === undefined ? '' : section('Rules over xDS', `<pre>${esc(JSON.stringify(d.rules.source, null, 2))}</pre>`),
    d.rlqs === undefined ? '' : section('Rate Limit Quota Service (RLQS)', `<pre>${esc(JSON.stringify(d.rlqs, null, 2))}</pre>`),
    d.capacity === undefined ? '' : section('Capacity service', `<pre>${esc(JSON.stringify(d.capacity, null, 2))}</pre>`),
    '</body></html>\n',
  ];
  return parts.join('\n');
}

function section(title: string, body: string): string {
  return `<h2>${esc(title)}</h2>\n${body}`;
}

function flag(ok: boolean, yes: string, no: string): string {
  return ok ? `<span class="ok">${esc(yes)}</span>` : `<span class="bad">${esc(no)}</span>`;
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const th = head.length === 0 ? '' : `<tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`;
  return `<table>${th}${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')}</table>`;
}

function health(d: StatusPageData): string {
  const r = d.rules.lastReload;
  const rows = [
    ['ready (/readyz)', `${flag(d.readiness.ready, 'ready', 'NOT READY')}${d.readiness.reason === undefined ? '' : ` ${esc(d.readiness.reason)}`}`],
    ['store', `${esc(d.store.backend)}: ${flag(d.store.healthy, 'healthy', 'UNHEALTHY')}${d.store.problem === undefined ? '' : ` ${esc(d.store.problem)}`}`],
    ['rules version', `<code>${esc(d.rules.version)}</code>`],
    ['last reload', `${esc(r.at)}: ${flag(r.ok, 'ok', 'FAILED (the last good rules stay in force)')}`],
  ];
  const errors = r.errors.length === 0 ? '' : `<p class="bad">Reload errors:</p><pre>${esc(r.errors.join('\n'))}</pre>`;
  const warnings = r.warnings.length === 0 ? '' : `<p>Warnings:</p><pre>${esc(r.warnings.join('\n'))}</pre>`;
  return section('Health', table([], rows) + errors + warnings);
}

function keyText(k: TopKey): string {
  return `<code>${esc(k.entries.map((e) => `${e.key}=${e.value}`).join(', '))}</code>`;
}

function count(k: TopKey): string {
  return k.error === 0 ? String(k.count) : `${k.count} (±${k.error})`;
}

function top(t: TopSnapshot | undefined): string {
  if (t === undefined) return section('Top limited keys', '<p>Off (TOP_KEYS=0).</p>');
  const rows: string[][] = [];
  for (const r of t.rules) {
    const rule = `${esc(r.domain)} <code>${esc(r.rule)}</code>${r.shadow_mode ? ' (shadow)' : ''}<br><small>${esc(r.source)}</small>`;
    for (const k of r.rejected) rows.push([rule, 'rejected', keyText(k), count(k)]);
    for (const k of r.near_limit) rows.push([rule, 'near limit', keyText(k), count(k)]);
  }
  const intro = `<p>Per rule, the keys most often rejected or near the limit over the last ${t.window_seconds / 60} minutes (values: ${esc(t.values)}).</p>`;
  const bounded = (t.max_values ?? []).map((b) => [
    `${esc(b.domain)} <code>${esc(b.rule)}</code>`,
    `${b.tracked} of ${b.max_values}`,
    esc(b.on_max_values),
    String(b.past_bound),
    esc(b.window_start),
  ]);
  const guards =
    bounded.length === 0
      ? ''
      : `<h3>Values per window (max_values)</h3>${table(['rule', 'values tracked', 'past the bound', 'requests past it', 'window from'], bounded)}`;
  return section(
    'Top limited keys',
    intro + (rows.length === 0 ? '<p>No key was limited in this window.</p>' : table(['rule', 'kind', 'key', 'count'], rows)) + guards,
  );
}

function rules(r: StatusPageData['rules']): string {
  const rows: string[][] = [];
  let total = 0;
  for (const d of r.domains) {
    for (const rule of d.rules) {
      if (total++ >= MAX_RULES_SHOWN) continue;
      const limits = rule.unlimited
        ? 'unlimited'
        : rule.limits
            .map((l) => `${l.requests_per_unit} / ${esc(l.window)} ${esc(l.algorithm)}${l.name === undefined ? '' : ` (${esc(l.name)})`}`)
            .join('<br>');
      const mode = [rule.shadow_mode ? 'shadow' : '', rule.quota_mode ? 'quota' : ''].filter((m) => m !== '').join(', ');
      rows.push([esc(d.name), `<code>${esc(rule.stats_key)}</code>`, limits, esc(mode), esc(rule.source)]);
    }
  }
  const more = total > MAX_RULES_SHOWN ? `<p>${total - MAX_RULES_SHOWN} more rules: see <a href="/rules">/rules</a>.</p>` : '';
  return section(`Rules in force (${total})`, table(['domain', 'rule', 'limit', 'mode', 'source'], rows) + more);
}
