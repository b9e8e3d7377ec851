/**
 * `ratelimit top`: who is being limited right now. Reads GET /top from a running server's admin port and
 * prints, per rule, the keys most often rejected and near the limit over the last minutes.
 *
 *   ratelimit top --admin 127.0.0.1:8080 --domain edge
 */
import type { TopKey, TopSnapshot } from '../top/top-keys.js';
import { eachArg } from './args.js';

export const TOP_USAGE = `usage: ratelimit top [--admin HOST:PORT] [--domain D] [--json]

Prints, per rule, the descriptor values most often rejected and near the limit over the last minutes, as
GET /top on the admin port serves them (values shown as TOP_VALUES says: plain, hashed or hidden).

options:
  --admin HOST:PORT     HTTP admin address of the server (default 127.0.0.1:8080)
  --domain D            only this domain's rules
  --timeout-ms N        how long to wait for the answer (default 2000)
  --json                print GET /top's JSON as it is
  --help                this text`;

interface Writable {
  write(text: string): unknown;
}

export async function runTop(argv: readonly string[], out: Writable, err: Writable): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(`${TOP_USAGE}\n`);
    return 0;
  }
  let admin = '127.0.0.1:8080';
  let domain: string | undefined;
  let json = false;
  let timeoutMs = 2000;
  try {
    eachArg(argv, (a, value) => {
      if (a === '--admin') admin = value();
      else if (a === '--domain') domain = value();
      else if (a === '--timeout-ms') timeoutMs = Number(value());
      else if (a === '--json') json = true;
      else throw new Error(`unknown argument ${a}`);
    });
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new Error('--timeout-ms must be a positive whole number');
  } catch (e) {
    err.write(`top: ${(e as Error).message}\n\n${TOP_USAGE}\n`);
    return 2;
  }
  const url = `http://${admin}/top${domain === undefined ? '' : `?domain=${encodeURIComponent(domain)}`}`;
  let body: string;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    body = await res.text();
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${body.trim()}`);
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code === 'ECONNREFUSED' ? 'nothing listens there' : (cause?.message ?? (e as Error).message);
    err.write(`top: cannot read ${url}: ${why}. Check the admin address (HTTP_HOST:HTTP_PORT of the server) and give it with --admin HOST:PORT.\n`);
    return 1;
  }
  if (json) {
    out.write(body.endsWith('\n') ? body : `${body}\n`);
    return 0;
  }
  out.write(formatTop(JSON.parse(body) as TopSnapshot, domain));
  return 0;
}

function line(kind: string, k: TopKey): string {
  const key = k.entries.map((e) => `${e.key}=${e.value}`).join(',');
  return `  ${kind.padEnd(10)} ${String(k.count).padStart(7)}${k.error === 0 ? '' : ` (±${k.error})`}  ${key}`;
}

export function formatTop(t: TopSnapshot, domain: string | undefined): string {
  const lines = [`top limited keys over the last ${t.window_seconds / 60} min (values: ${t.values})${domain === undefined ? '' : `, domain ${domain}`}`];
  if (t.rules.length === 0) lines.push('  no key was rejected or near its limit in this window');
  for (const r of t.rules) {
    lines.push('', `${r.domain} ${r.rule}${r.shadow_mode ? ' (shadow_mode)' : ''}  [${r.source}]`);
    for (const k of r.rejected) lines.push(line('rejected', k));
    for (const k of r.near_limit) lines.push(line('near', k));
  }
  for (const b of t.max_values ?? []) {
    lines.push('', `${b.domain} ${b.rule}  max_values ${b.max_values} (${b.on_max_values})`);
    lines.push(`  ${b.tracked} value(s) tracked in the window from ${b.window_start}; ${b.past_bound} request(s) past the bound`);
  }
  return `${lines.join('\n')}\n`;
}
