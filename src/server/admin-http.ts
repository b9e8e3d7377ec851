/**
 * The HTTP admin server: GET /healthz (alive), GET /readyz (can answer: rules loaded, store usable),
 * GET /metrics (Prometheus), GET /rules (rules in use, files, version, last reload), POST /json, and
 * envoyproxy/ratelimit's GET /healthcheck (200 "OK" while this replica can answer, else 500).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { RateLimitError } from '../core/errors.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import type { Registry } from 'prom-client';
import { decisionToJson, requestFromJson } from './json-api.js';

export interface AdminServerOptions {
  readonly host: string;
  readonly port: number;
  readonly limiter: RateLimiter;
  readonly registry: Registry;
  readonly ready: () => boolean;
  /** /healthcheck: whether this replica can answer now (default: `ready`). */
  readonly canAnswer?: () => boolean;
  readonly rules: () => unknown;
  readonly onError?: (err: unknown) => void;
}

const MAX_BODY = 1 << 20;

function send(res: http.ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = typeof body === 'string' ? body : `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(options: AdminServerOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const route = `${req.method ?? 'GET'} ${path}`;
  switch (route) {
    case 'GET /healthz':
      return send(res, 200, 'OK\n', 'text/plain');
    case 'GET /readyz':
      return options.ready() ? send(res, 200, 'OK\n', 'text/plain') : send(res, 503, 'NOT READY\n', 'text/plain');
    case 'GET /healthcheck':
      return (options.canAnswer ?? options.ready)() ? send(res, 200, 'OK', 'text/plain; charset=utf-8') : send(res, 500, 'NOT OK', 'text/plain; charset=utf-8');
    case 'GET /metrics':
      return send(res, 200, await options.registry.metrics(), options.registry.contentType);
    case 'GET /rules':
      return send(res, 200, options.rules());
    case 'POST /json': {
      let text: string;
      try {
        text = await readBody(req);
      } catch {
        return send(res, 413, { error: `body larger than ${MAX_BODY} bytes` });
      }
      try {
        const decision = await options.limiter.decide(requestFromJson(text));
        return send(res, decision.overallCode === 'OVER_LIMIT' ? 429 : 200, decisionToJson(decision));
      } catch (err) {
        if (err instanceof RateLimitError && err.code === 'INVALID_REQUEST') return send(res, 400, { error: err.message });
        options.onError?.(err);
        return send(res, err instanceof RateLimitError ? 503 : 500, { error: err instanceof Error ? err.message : String(err) });
      }
    }
    default:
      if (['/healthz', '/readyz', '/healthcheck', '/metrics', '/rules', '/json'].includes(path ?? '')) return send(res, 405, { error: `${req.method} not allowed on ${path}` });
      return send(res, 404, { error: `no route ${path}`, routes: ['GET /healthz', 'GET /readyz', 'GET /healthcheck', 'GET /metrics', 'GET /rules', 'POST /json'] });
  }
}

export async function startAdminServer(options: AdminServerOptions): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    handle(options, req, res).catch((err: unknown) => {
      options.onError?.(err);
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
