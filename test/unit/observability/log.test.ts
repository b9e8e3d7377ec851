/** The pino logger behind the Logger interface: JSON lines, redaction, stacks, children, text format, levels. */
import { describe, expect, it } from 'vitest';
import { componentLogger, createLogger, type LogLevel } from '../../../src/observability/log.js';

function capture(level: LogLevel = 'debug', format: 'json' | 'text' = 'json') {
  const lines: string[] = [];
  const log = createLogger({ level, format, write: (l) => lines.push(l) });
  return { log, lines, json: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('logger (pino)', () => {
  it('writes one JSON object per line with time, level, msg and the fields', () => {
    const { log, lines, json } = capture();
    log.info('rules reloaded', { version: 'abc', domains: ['edge'] });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('\n');
    const [o] = json();
    expect(o).toMatchObject({ level: 'info', msg: 'rules reloaded', version: 'abc', domains: ['edge'] });
    expect(new Date(o!.time as string).toISOString()).toBe(o!.time);
  });

  it('redacts secrets: password/auth/token fields and the password of any URL', () => {
    const { log, json } = capture();
    log.warn('connecting', { password: 'hunter2', redis: { auth: 'x', url: 'redis://app:hunter2@db:6379/0' }, note: 'via rediss://:p4ss@h:1' });
    const text = JSON.stringify(json()[0]);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('p4ss');
    expect(json()[0]).toMatchObject({ password: '***', redis: { auth: '***', url: 'redis://app:***@db:6379/0' }, note: 'via rediss://:***@h:1' });
  });

  it('redacts the password of a URL in the message too', () => {
    const { log, lines } = capture();
    log.warn('cannot reach redis://app:hunter2@db:6379');
    log.warn('cannot reach redis://app:hunter2@db:6379', { attempt: 2 });
    componentLogger(log, 'store').error('lost rediss://:p4ss@h:1');
    expect(lines.join('\n')).not.toMatch(/hunter2|p4ss/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'cannot reach redis://app:***@db:6379' });
  });

  it('writes an Error with its type, message and stack', () => {
    const { log, json } = capture();
    log.error('request failed', { error: new TypeError('boom') });
    const error = json()[0]!.error as Record<string, string>;
    expect(error).toMatchObject({ type: 'TypeError', message: 'boom' });
    expect(error.stack).toMatch(/^TypeError: boom\n\s+at /);
  });

  it('gives each component a child logger that names it', () => {
    const { log, json } = capture();
    componentLogger(log, 'store').info('connected to Redis', { url: 'redis://r:6379' });
    expect(json()[0]).toMatchObject({ component: 'store', msg: 'connected to Redis' });
  });

  it('filters by level (trace lets everything through)', () => {
    const warn = capture('warn');
    warn.log.info('hidden');
    warn.log.debug('hidden');
    warn.log.warn('shown');
    warn.log.error('shown too');
    expect(warn.json().map((o) => o.level)).toEqual(['warn', 'error']);
    const trace = capture('trace');
    trace.log.debug('shown');
    expect(trace.lines).toHaveLength(1);
  });

  it('LOG_FORMAT=text: time LEVEL [component] msg key=value, stacks on their own lines', () => {
    const { log, lines } = capture('info', 'text');
    componentLogger(log, 'rules').warn('rules have ignored keys', { count: 2, password: 'x' });
    log.error('failed', { error: new Error('bad') });
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z WARN \[rules\] rules have ignored keys count=2 password="\*\*\*"$/);
    expect(lines[1]).toMatch(/ ERROR failed error="bad"\nError: bad\n\s+at /);
  });
});
