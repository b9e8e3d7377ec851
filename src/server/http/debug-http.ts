/**
 * The extra HTTP listeners of envoyproxy/ratelimit, for deployments that probe them:
 *  - DEBUG_PORT: GET /rlconfig (the loaded rules as text, one line per rule, as the reference prints them),
 *    GET /rules (the same as JSON), GET /stats (the metrics in Prometheus text), GET / (this list).
 *  - USE_PROMETHEUS: GET PROMETHEUS_PATH on PROMETHEUS_ADDR, from the same registry as the admin /metrics.
 */
import * as http from 'node:http';
import { listenHttp, type HttpListener } from './http-listen.js';
import type { Registry } from 'prom-client';
import type { ConfigDescription } from '../../config/compile/describe-rules.js';

type Answer = { status: number; body: string; type: string };
type Route = (req: http.IncomingMessage) => Answer | Promise<Answer>;

export type Listener = HttpListener;

async function listen(host: string, port: number, routes: ReadonlyMap<string, Route>, onError?: (err: unknown) => void): Promise<Listener> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = routes.get(path);
    const answer =
      route === undefined
        ? Promise.resolve({ status: 404, body: `no route ${path}; routes: ${[...routes.keys()].join(' ')}\n`, type: 'text/plain' })
        : req.method !== 'GET' && req.method !== 'HEAD'
          ? Promise.resolve({ status: 405, body: `${req.method} not allowed on ${path}\n`, type: 'text/plain' })
          : Promise.resolve().then(() => route(req));
    answer.then(
      ({ status, body, type }) => {
        res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        onError?.(err);
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end('internal error\n');
      },
    );
  });
  return listenHttp(server, host, port, onError);
}

/**
 * The rules as envoyproxy/ratelimit's /rlconfig prints them, one line per limit:
 * `stats_key: unit=MINUTE requests_per_unit=N, shadow_mode: B, quota_mode: B` (unlimited: `unit=UNKNOWN
 * requests_per_unit=0`), then what the reference has no words for (`, algorithm=...`, `, window=...`, `, name=...`).
 */
export function rlconfigText(domains: ConfigDescription): string {
  const lines: string[] = [];
  for (const d of domains) {
    for (const r of d.rules) {
      const modes = `shadow_mode: ${r.shadow_mode}, quota_mode: ${r.quota_mode}`;
      if (r.unlimited) {
        lines.push(`${r.stats_key}: unit=UNKNOWN requests_per_unit=0, ${modes}`);
        continue;
      }
      for (const l of r.limits) {
        const algorithm = l.algorithm === 'fixed_window' ? '' : `, algorithm=${l.algorithm}`;
        const window = l.unit === null ? `, window=${l.window}` : '';
        const name = l.name === undefined ? '' : `, name=${l.name}`;
        lines.push(`${r.stats_key}: unit=${l.unit?.toUpperCase() ?? 'UNKNOWN'} requests_per_unit=${l.requests_per_unit}, ${modes}${algorithm}${window}${name}`);
      }
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

export interface DebugServerOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  /** The loaded domains (RulesHolder's config.describe()). */
  readonly domains: () => ConfigDescription;
  /** The full /rules document of the admin server. */
  readonly rules: () => unknown;
  readonly onError?: (err: unknown) => void;
}

export function startDebugServer(o: DebugServerOptions): Promise<Listener> {
  const text = (body: string) => ({ status: 200, body, type: 'text/plain; charset=utf-8' });
  const help: Record<string, string> = {
    '/rlconfig': 'print out the currently loaded configuration for debugging',
    '/rules': 'the currently loaded configuration as JSON (version, files, last reload, rules)',
    '/stats': 'print out stats (Prometheus text)',
  };
  const routes = new Map<string, Route>([
    ['/rlconfig', () => text(rlconfigText(o.domains()))],
    ['/rules', () => ({ status: 200, body: `${JSON.stringify(o.rules(), null, 2)}\n`, type: 'application/json' })],
    ['/stats', async () => ({ status: 200, body: await o.registry.metrics(), type: o.registry.contentType })],
  ]);
  routes.set('/', () =>
    text(
      Object.entries(help)
        .map(([path, what]) => `${path}: ${what}\n`)
        .join(''),
    ),
  );
  return listen(o.host, o.port, routes, o.onError);
}

/** `:9090` → host 0.0.0.0, port 9090; `127.0.0.1:9090`; `[::1]:9090`. */
export function parseListenAddr(addr: string): { host: string; port: number } {
  const m = /^(.*):(\d{1,5})$/.exec(addr.trim());
  if (!m) throw new Error(`'${addr}' is not [host]:port`);
  const host = m[1]!.replace(/^\[(.*)\]$/, '$1');
  return { host: host === '' ? '0.0.0.0' : host, port: Number(m[2]) };
}

export function startMetricsServer(o: { host: string; port: number; path: string; registry: Registry; onError?: (err: unknown) => void }): Promise<Listener> {
  const routes = new Map<string, Route>([[o.path, async () => ({ status: 200, body: await o.registry.metrics(), type: o.registry.contentType })]]);
  return listen(o.host, o.port, routes, o.onError);
}
