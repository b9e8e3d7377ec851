/**
 * docs/logging.md quotes log lines; an operator greps for them, so every quoted message must be one the code
 * can write. The messages are taken from the page (the `msg` of JSON lines, the message of text lines, and the
 * first column of its "Messages" table) and matched against every string literal in src/, a template literal's
 * `${...}` standing for any text (a `<name>` in the table stands for a value the same way).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const PAGE = readFileSync(join(ROOT, 'docs/logging.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Every string and template literal of a TypeScript file, as a pattern: literal text escaped, each `${...}`
 * (nested templates included) as a wildcard. Comments are skipped so that prose cannot pass for a message.
 */
export function literalPatterns(code: string): string[] {
  const out: string[] = [];
  let i = 0;
  const template = (): string => {
    // at the opening backtick
    let pattern = '';
    i++;
    while (i < code.length && code[i] !== '`') {
      if (code[i] === '\\') {
        pattern += escapeRe(unescape(code[i + 1]!));
        i += 2;
        continue;
      }
      if (code[i] === '$' && code[i + 1] === '{') {
        i += 2;
        expression('}');
        i++; // the closing brace
        pattern += '[\\s\\S]*?';
        continue;
      }
      pattern += escapeRe(code[i]!);
      i++;
    }
    i++;
    return pattern;
  };
  const quoted = (q: string): string => {
    let text = '';
    i++;
    while (i < code.length && code[i] !== q && code[i] !== '\n') {
      if (code[i] === '\\') {
        text += unescape(code[i + 1]!);
        i += 2;
        continue;
      }
      text += code[i];
      i++;
    }
    i++;
    return escapeRe(text);
  };
  /** Scans code until `end` at depth 0 (or the end of the file), collecting the literals inside it. */
  const expression = (end: string | undefined): void => {
    let depth = 0;
    while (i < code.length) {
      const c = code[i]!;
      if (c === '/' && code[i + 1] === '/') {
        while (i < code.length && code[i] !== '\n') i++;
        continue;
      }
      if (c === '/' && code[i + 1] === '*') {
        const j = code.indexOf('*/', i + 2);
        i = j < 0 ? code.length : j + 2;
        continue;
      }
      if (c === '`') {
        out.push(template());
        continue;
      }
      if (c === '"' || c === "'") {
        out.push(quoted(c));
        continue;
      }
      if (c === '{') depth++;
      if (c === '}') {
        if (depth === 0 && end === '}') return;
        depth--;
      }
      i++;
    }
  };
  expression(undefined);
  return out;
}

function unescape(c: string): string {
  return c === 'n' ? '\n' : c === 't' ? '\t' : c;
}

/** The messages docs/logging.md quotes. */
export function quotedMessages(page: string): string[] {
  const messages: string[] = [];
  let fence: string | undefined;
  let inTable = false;
  for (const line of page.split('\n')) {
    const open = /^```(\w*)/.exec(line);
    if (open) {
      fence = fence === undefined ? open[1]! : undefined;
      continue;
    }
    if (fence === 'json') {
      for (const m of line.matchAll(/"msg":"((?:[^"\\]|\\.)*)"/g)) messages.push(JSON.parse(`"${m[1]!}"`) as string);
    } else if (fence === '') {
      // A text line: `time LEVEL [component] message key="value" ...`
      const m = /^\S+Z (?:TRACE|DEBUG|INFO|WARN|ERROR) (?:\[[\w-]+\] )?(.*?)(?: \w+=[^ ]+)*$/.exec(line);
      if (m) messages.push(m[1]!.replace(/( \w+="[^"]*")+$/, ''));
    } else if (fence === undefined) {
      if (/^## /.test(line)) inTable = line === '## Messages';
      // A code span of one or two backticks (two when the message itself holds one).
      const row = inTable && /^\| (`+) ?(.+?) ?\1 \|/.exec(line);
      if (row) messages.push(row[2]!);
    }
  }
  return messages;
}

// A literal that is only `${...}` (or a few characters around them) would match any message: left out.
const PATTERNS = sourceFiles(join(ROOT, 'src'))
  .flatMap((f) => literalPatterns(readFileSync(f, 'utf8')))
  .filter(
    (p) =>
      p
        .replaceAll('[\\s\\S]*?', '')
        .replace(/\\(.)/g, '$1')
        .replace(/[^A-Za-z]/g, '').length >= 4,
  );

/**
 * A quoted message is written by the code when one literal of src/ produces it. `<name>` on the page stands
 * for a value and a trailing `...` for the rest of a shortened message: both must fall where the literal has a
 * `${...}`, so they are tried as a plain `X`, which only a wildcard matches.
 */
function written(message: string): boolean {
  const sample = message.replace(/<[\w ]+>/g, 'X').replace(/ ?\.\.\.$/, 'X');
  return PATTERNS.some((p) => new RegExp(`^${p}$`).test(sample));
}

describe('docs/logging.md', () => {
  const messages = quotedMessages(PAGE);

  it('quotes log messages (the extraction finds the JSON, text and table ones)', () => {
    expect(messages.length).toBeGreaterThanOrEqual(15);
    expect(messages).toContain('`lease` is ignored with BACKEND=memory: the in-memory store already decides locally');
    expect(messages).toContain('ratelimit-sidecar started');
  });

  it.each(messages)('quotes "%s" as the code writes it', (message) => {
    expect(written(message), message).toBe(true);
  });

  it('finds a drifted message (the check can fail)', () => {
    expect(written('Redis not reachable yet; answering by FAILURE_MODE until it is')).toBe(false);
    expect(written('Redis connection established')).toBe(false);
    expect(written('rules reloaded; keeping the last good rules')).toBe(false);
    expect(written('<where> connection ready')).toBe(true);
  });
});
