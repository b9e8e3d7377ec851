/**
 * Structured logs with pino: one JSON object per line on stderr (LOG_FORMAT=json) or a plain text line
 * (LOG_FORMAT=text, formatted here; pino-pretty is a dev tool). Secrets are redacted (password/auth/token
 * fields and the password of any URL), Error values are written with their stack, and `child()` gives a
 * component its own logger (`{"component":"redis",...}`).
 *
 * Every module logs through the small Logger interface below (`log.info(msg, fields)`), so call sites do not
 * depend on pino.
 */
import pino from 'pino';
import { redactUrlsIn } from '../vocab/redact.js';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** The root logger: a Logger that can also make per-component children. */
export interface RootLogger extends Logger {
  child(bindings: Record<string, unknown>): RootLogger;
}

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: 'json' | 'text';
  /** Receives each finished line without its newline (tests); default: stderr, synchronously. */
  readonly write?: (line: string) => void;
}

/** Field names whose values are never written (at the top level and one level down). */
const SECRET_KEYS = ['password', 'pass', 'auth', 'token', 'secret', 'authorization', 'redisAuth', 'sentinelPassword'];
export const REDACT_PATHS = SECRET_KEYS.flatMap((k) => [k, `*.${k}`]);

function clean(value: unknown, depth = 0): unknown {
  if (value instanceof Error) {
    const out: Record<string, unknown> = { type: value.name, message: redactUrlsIn(value.message) };
    if (value.stack) out.stack = redactUrlsIn(value.stack);
    if ((value as { code?: unknown }).code !== undefined) out.code = (value as { code?: unknown }).code;
    return out;
  }
  if (typeof value === 'string') return redactUrlsIn(value);
  if (depth < 3 && Array.isArray(value)) return value.map((v) => clean(v, depth + 1));
  if (depth < 3 && value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = clean(v, depth + 1);
    return out;
  }
  return value;
}

function textLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const { time, level, msg, component, ...fields } = o;
  const str = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const head = `${str(time)} ${str(level).toUpperCase()}${component === undefined ? '' : ` [${str(component)}]`} ${str(msg ?? '')}`;
  const tail = Object.entries(fields).map(([k, v]) => {
    if (v !== null && typeof v === 'object' && typeof (v as { stack?: unknown }).stack === 'string')
      return ` ${k}=${JSON.stringify((v as { message?: unknown }).message)}\n${(v as { stack: string }).stack}`;
    return ` ${k}=${JSON.stringify(v)}`;
  });
  return head + tail.join('');
}

export function createLogger(options: LoggerOptions): RootLogger {
  const sink = options.write;
  const stream: pino.DestinationStream =
    sink === undefined
      ? options.format === 'json'
        ? pino.destination({ fd: 2, sync: true })
        : { write: (line: string) => void process.stderr.write(`${textLine(line.replace(/\n$/, ''))}\n`) }
      : { write: (line: string) => sink(options.format === 'json' ? line.replace(/\n$/, '') : textLine(line.replace(/\n$/, ''))) };
  const root = pino(
    {
      level: options.level,
      base: null,
      messageKey: 'msg',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '***' },
      formatters: {
        level: (label) => ({ level: label }),
        log: (object) => clean(object) as Record<string, unknown>,
      },
    },
    stream,
  );
  return wrap(root);
}

function wrap(p: pino.Logger): RootLogger {
  // The message is not a field (formatters.log never sees it): its URL passwords are redacted here.
  const at = (level: 'debug' | 'info' | 'warn' | 'error') => (msg: string, fields?: Record<string, unknown>) => {
    if (fields === undefined) p[level](redactUrlsIn(msg));
    else p[level](fields, redactUrlsIn(msg));
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (bindings) => wrap(p.child(bindings)),
  };
}

/** A component's logger: a pino child when the logger has one, else the logger itself with the fields added. */
export function componentLogger(log: Logger, component: string): Logger {
  const withChild = log as Partial<RootLogger>;
  if (typeof withChild.child === 'function') return withChild.child({ component });
  const add = (f?: Record<string, unknown>) => ({ component, ...f });
  return {
    debug: (m, f) => log.debug(m, add(f)),
    info: (m, f) => log.info(m, add(f)),
    warn: (m, f) => log.warn(m, add(f)),
    error: (m, f) => log.error(m, add(f)),
  };
}
