/**
 * The HTTP admin server: GET /healthz (alive), GET /readyz (can answer and the store decides; 503 with the
 * reason otherwise, see server/health/service-health.ts),
 * GET /metrics (Prometheus), GET /rules (rules in use, files, version, last reload), GET /top (the keys most
 * limited per rule, ?domain= to narrow), GET / (the status page, status-page.ts), POST /json.
 * POST /json follows `jsonApi`: 'on' decides like ShouldRateLimit (consumes quota), 'check' answers what
 * ShouldRateLimit would without consuming (the default: whoever reaches the admin port cannot spend a
 * client's quota), 'off' has no such route (404).
 * envoyproxy/ratelimit's GET /healthcheck: 200 "OK" while this replica can answer, else 500.
 */
import * as http from 'node:http';
import { listenHttp } from './http-listen.js';
import { RateLimitError } from '../../vocab/errors.js';
import type { RateLimiter } from '../../core/rate-limiter.js';
import type { DecisionTracer } from '../../core/decision-trace.js';
import { DEFAULT_REQUEST_LIMITS, type RequestLimits } from '../../vocab/request-limits.js';
import type { Registry } from 'prom-client';
import { decisionToJson, requestFromJson } from './json-api.js';
import { STATUS_PAGE_CSP } from './status-page.js';

export interface AdminServerOptions {
  readonly host: string;
  readonly port: number;
  readonly limiter: RateLimiter;
  /** Bounds on POST /json (the body is bound by maxMessageBytes); default DEFAULT_REQUEST_LIMITS. */
  readonly requestLimits?: RequestLimits;
  readonly registry: Registry;
  /** GET /readyz: 200, or 503 with `reason` as the body. */
  readonly ready: () => { readonly ready: boolean; readonly reason?: string | undefined };
  /** /healthcheck: whether this replica can answer now (rules loaded, gRPC serving, not draining). */
  readonly canAnswer: () => boolean;
  readonly rules: () => unknown;
  /** GET /top: the top limited keys per rule, of one domain when given (absent = TOP_KEYS=0: 404). */
  readonly top?: (domain: string | undefined) => unknown;
  /** GET /: the status page's HTML (absent = 404). */
  readonly statusPage?: () => string;
  /** GET /capacity: the capacity service's resources and clients (absent = 404). */
  readonly capacity?: () => unknown;
  /** GET /rlqs: the Rate Limit Quota Service's buckets and each Envoy's current share (absent = 404). */
  readonly rlqs?: () => unknown;
  /** POST /json: 'off' (404), 'check' (read-only, the default) or 'on' (consumes quota). */
  readonly jsonApi?: JsonApiMode;
  /** Tracing on: each POST /json is a span under the trace context of its headers. */
  readonly tracer?: DecisionTracer;
  readonly onError?: (err: unknown) => void;
}

export type JsonApiMode = 'off' | 'check' | 'on';

/** After an oversized body, at most this much more is read and dropped before the connection is cut. */
const DRAIN_LIMIT_BYTES = 16 << 20;
const DRAIN_LIMIT_MS = 5_000;

function send(res: http.ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = typeof body === 'string' ? body : `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

type Body = { ok: true; bytes: Buffer } | { ok: false; drained: boolean };

/**
 * The request body, or `ok: false` once it passes maxBytes. Then the rest is read and dropped (bounded by
 * DRAIN_LIMIT_BYTES and DRAIN_LIMIT_MS) before we answer: a server that answers and closes while the
 * client is still sending resets the connection, and the client never sees the 413.
 */
function readBody(req: http.IncomingMessage, maxBytes: number): Promise<Body> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = Number(req.headers['content-length'] ?? 0) > maxBytes;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = () => {
      req.removeAllListeners('data');
      req.pause();
      resolve({ ok: false, drained: false });
    };
    const overflow = () => {
      tooLarge = true;
      chunks.length = 0;
      timer = setTimeout(giveUp, DRAIN_LIMIT_MS);
    };
    if (tooLarge) overflow();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (!tooLarge && size > maxBytes) overflow();
      if (!tooLarge) chunks.push(chunk);
      else if (size > maxBytes + DRAIN_LIMIT_BYTES) {
        clearTimeout(timer);
        giveUp();
      }
    });
    req.on('end', () => {
      clearTimeout(timer);
      resolve(tooLarge ? { ok: false, drained: true } : { ok: true, bytes: Buffer.concat(chunks) });
    });
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // A client that goes away mid-body: settle (a no-op after 'end').
    req.on('close', () => {
      clearTimeout(timer);
      reject(new Error('client closed the connection before the body ended'));
    });
  });
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The HTTP status POST /json answers an error with: bad input 400, too large 413, store 503, else 500. */
function jsonErrorStatus(err: unknown): number {
  if (!(err instanceof RateLimitError)) return 500;
  return err.code === 'INVALID_REQUEST' ? 400 : err.code === 'REQUEST_TOO_LARGE' ? 413 : 503;
}

async function handle(options: AdminServerOptions, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const [path, query] = (req.url ?? '/').split('?', 2);
  const jsonApi = options.jsonApi ?? 'check';
  const route = jsonApi === 'off' && path === '/json' ? 'off' : `${req.method ?? 'GET'} ${path}`;
  switch (route) {
    case 'GET /healthz':
      return send(res, 200, 'OK\n', 'text/plain');
    case 'GET /readyz': {
      const r = options.ready();
      return r.ready ? send(res, 200, 'OK\n', 'text/plain') : send(res, 503, `NOT READY: ${r.reason ?? 'unknown'}\n`, 'text/plain');
    }
    case 'GET /healthcheck':
      return options.canAnswer() ? send(res, 200, 'OK', 'text/plain; charset=utf-8') : send(res, 500, 'NOT OK', 'text/plain; charset=utf-8');
    case 'GET /metrics':
      return send(res, 200, await options.registry.metrics(), options.registry.contentType);
    case 'GET /rules':
      return send(res, 200, options.rules());
    case 'GET /top':
      if (options.top !== undefined) return send(res, 200, options.top(new URLSearchParams(query ?? '').get('domain') ?? undefined));
      return send(res, 404, { error: 'the top limited keys are off (TOP_KEYS=0)' });
    case 'GET /':
      if (options.statusPage === undefined) return send(res, 404, { error: 'no status page' });
      res.setHeader('cache-control', 'no-store');
      res.setHeader('content-security-policy', STATUS_PAGE_CSP);
      return send(res, 200, options.statusPage(), 'text/html; charset=utf-8');
    case 'GET /capacity':
      if (options.capacity !== undefined) return send(res, 200, options.capacity());
      return send(res, 404, { error: 'the capacity service is off (CAPACITY_CONFIG unset)' });
    case 'GET /rlqs':
      if (options.rlqs !== undefined) return send(res, 200, options.rlqs());
      return send(res, 404, { error: 'the quota service is not served' });
    case 'POST /json': {
      const limits = options.requestLimits ?? DEFAULT_REQUEST_LIMITS;
      const body = await readBody(req, limits.maxMessageBytes);
      if (!body.ok) {
        res.setHeader('connection', 'close');
        if (!body.drained) res.once('finish', () => req.socket.destroy());
        return send(res, 413, { error: `body larger than ${limits.maxMessageBytes} bytes (MAX_REQUEST_BYTES)` });
      }
      let text: string;
      try {
        text = UTF8.decode(body.bytes);
      } catch {
        return send(res, 400, { error: 'body is not valid UTF-8 (raw bytes in a value: write each as \\udc80..\\udcff, see docs/limits.md)' });
      }
      const trace = options.tracer?.start('json', req.headers);
      try {
        const decision = await options.limiter.decide(requestFromJson(text, limits), {
          checkOnly: jsonApi === 'check',
          call: closeSignal(res),
          ...(trace === undefined ? {} : { trace }),
        });
        const status = decision.overallCode === 'OVER_LIMIT' ? 429 : 200;
        trace?.end(status);
        return send(res, status, decisionToJson(decision));
      } catch (err) {
        const status = jsonErrorStatus(err);
        trace?.fail(status, err);
        // The client went away while a delayed request waited (its slot was given back): no one to answer.
        if (res.destroyed && !res.writableFinished) return;
        if (status === 500 || status === 503) options.onError?.(err);
        return send(res, status, { error: err instanceof Error ? err.message : String(err) });
      }
    }
    case 'off':
      return send(res, 404, { error: 'POST /json is disabled (JSON_API=off)' });
    default: {
      const routes = [
        'GET /healthz',
        'GET /readyz',
        'GET /healthcheck',
        'GET /metrics',
        'GET /rules',
        ...(options.top === undefined ? [] : ['GET /top']),
        ...(options.statusPage === undefined ? [] : ['GET /']),
        ...(options.capacity === undefined ? [] : ['GET /capacity']),
        ...(options.rlqs === undefined ? [] : ['GET /rlqs']),
        ...(jsonApi === 'off' ? [] : ['POST /json']),
      ];
      if (routes.some((r) => r.endsWith(` ${path}`))) return send(res, 405, { error: `${req.method} not allowed on ${path}` });
      return send(res, 404, { error: `no route ${path}`, routes });
    }
  }
}

/**
 * The HTTP exchange's end as an AbortSignal for the engine, made on first use (only a request that waits for
 * a delayed slot reads it): aborted when the connection closes before the answer was sent.
 */
function closeSignal(res: http.ServerResponse): { readonly signal: AbortSignal } {
  let controller: AbortController | undefined;
  return {
    get signal() {
      if (controller === undefined) {
        const c = (controller = new AbortController());
        const abort = () => c.abort(new Error('client closed the connection'));
        if (res.destroyed) abort();
        else res.once('close', () => res.writableFinished || abort());
      }
      return controller.signal;
    },
  };
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
  return listenHttp(server, options.host, options.port, options.onError);
}
