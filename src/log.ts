/** A small structured logger: one line per event, JSON or text, to stderr; levels filtered at the root. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(options: { level: LogLevel; format: 'json' | 'text'; write?: (line: string) => void }): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const min = ORDER[options.level];
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return;
    const time = new Date().toISOString();
    if (options.format === 'json') {
      write(JSON.stringify({ time, level, msg, ...fields }, (_k, v: unknown) => (v instanceof Error ? v.message : v)));
    } else {
      const extra = fields ? Object.entries(fields).map(([k, v]) => ` ${k}=${v instanceof Error ? v.message : JSON.stringify(v)}`).join('') : '';
      write(`${time} ${level.toUpperCase()} ${msg}${extra}`);
    }
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
