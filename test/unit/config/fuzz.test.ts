/**
 * Config fuzzing, bounded in count and time: alias bombs, deep nesting, huge files, bad encodings and
 * random mutations of every valid fixture. Whatever the input: no hang (each file within a time budget), no
 * crash (no exception escapes), and every failure is a ConfigError naming the file with line:col.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, compileConfigFiles, loadConfigDir } from '../../../src/config/index.js';
import type { CompileResult } from '../../../src/config/index.js';
import { cpuMs } from '../../support/cpu-time.js';
import { prng } from '../../support/prng.js';
import type { Prng } from '../../support/prng.js';
import { FIXTURES } from './support.js';
import { tempDir } from './fs-helpers.js';

const PER_FILE_MS = 3000;

function check(name: string, result: CompileResult, elapsedMs: number, input: string): void {
  const context = `${name} (${elapsedMs.toFixed(0)} ms): ${JSON.stringify(input.slice(0, 300))}`;
  expect(elapsedMs, context).toBeLessThan(PER_FILE_MS);
  const all = result.ok ? result.warnings : result.errors;
  for (const e of all) {
    expect(e, context).toBeInstanceOf(ConfigError);
    expect(e.file, context).toBe(name);
    expect(e.line, context).toBeGreaterThanOrEqual(1);
    expect(e.column, context).toBeGreaterThanOrEqual(1);
    expect(e.message.startsWith(`${name}:${e.line}:${e.column}: `), context).toBe(true);
  }
}

function compileTimed(name: string, text: string): void {
  // CPU time bounds the work per file (a hang or blow-up takes far longer); wall time would also count every
  // other process on a busy machine.
  const started = cpuMs();
  let result: CompileResult;
  try {
    result = compileConfigFiles([{ name, text }], { mergeDomains: false });
  } catch (err) {
    throw new Error(`${name} threw ${String(err)} on ${JSON.stringify(text.slice(0, 300))}`);
  }
  check(name, result, cpuMs() - started, text);
}

function seeds(): string[] {
  const texts: string[] = [];
  for (const sub of ['valid', 'envoy', 'invalid', 'warnings', 'compat', 'limits']) {
    for (const f of readdirSync(FIXTURES + sub)) texts.push(readFileSync(join(FIXTURES, sub, f), 'utf8'));
  }
  return texts;
}

const SIGNIFICANT = [
  ':',
  '-',
  '[',
  ']',
  '{',
  '}',
  '&a',
  '*a',
  '<<: *a',
  '!',
  '|',
  '>',
  "'",
  '"',
  '#',
  '\n',
  ' ',
  ',',
  '?',
  '%',
  '@',
  '\t',
  '---\n',
  '~',
  '0x',
  '1e9',
  '*',
  'é',
  '\u0000',
  '\uFEFF',
];

function mutate(r: Prng, text: string): string {
  let t = text;
  for (let n = r.int(1, 6); n > 0; n--) {
    const at = r.int(0, t.length);
    switch (r.int(0, 4)) {
      case 0:
        t = t.slice(0, at) + t.slice(at + r.int(1, 20));
        break;
      case 1: {
        const from = r.int(0, t.length);
        t = t.slice(0, at) + t.slice(from, from + r.int(1, 80)) + t.slice(at);
        break;
      }
      case 2:
        t = t.slice(0, at) + r.pick(SIGNIFICANT) + t.slice(at);
        break;
      case 3: {
        const lines = t.split('\n');
        const i = r.int(0, lines.length - 1);
        lines.splice(r.int(0, lines.length - 1), 0, `${' '.repeat(r.int(0, 8))}${lines[i]!.trimStart()}`);
        t = lines.join('\n');
        break;
      }
      default:
        t = t.slice(0, at) + String.fromCharCode(r.int(0, 0x2fff)) + t.slice(at);
    }
  }
  return t;
}

function aliasBomb(r: Prng): string {
  const width = r.int(2, 12);
  const levels = r.int(3, 12);
  const where = r.pick(['metadata', 'merge', 'descriptors']);
  let text = 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n';
  if (where === 'metadata') {
    text += `    metadata:\n      l0: &l0 [${Array(width).fill('x').join(', ')}]\n`;
    for (let i = 1; i <= levels; i++)
      text += `      l${i}: &l${i} [${Array(width)
        .fill(`*l${i - 1}`)
        .join(', ')}]\n`;
  } else if (where === 'merge') {
    text += '  - key: m0\n    rate_limit: &l0 {unit: second, requests_per_unit: 1}\n';
    for (let i = 1; i <= levels; i++)
      text += `  - key: m${i}\n    rate_limit: &l${i}\n      <<: [${Array(width)
        .fill(`*l${i - 1}`)
        .join(', ')}]\n`;
  } else {
    text += `    descriptors: &l0\n      - {key: a, rate_limit: {unit: second, requests_per_unit: 1}}\n`;
    for (let i = 1; i <= levels; i++)
      text += `  - key: n${i}\n    descriptors: &l${i} [${Array(width)
        .fill(`{key: x, descriptors: *l${i - 1}}`)
        .join(', ')}]\n`;
  }
  return text;
}

function deepNesting(r: Prng): string {
  const depth = r.int(100, 2000);
  switch (r.int(0, 3)) {
    case 0:
      return `domain: d\ndescriptors:\n  - key: k\n    metadata: ${'['.repeat(depth)}${']'.repeat(r.chance(0.5) ? depth : 0)}\n`;
    case 1:
      return `domain: d\ndescriptors:\n  - key: k\n    metadata: ${'{a: '.repeat(depth)}1${'}'.repeat(depth)}\n`;
    case 2: {
      let t = 'domain: d\ndescriptors:\n';
      for (let i = 0; i < Math.min(depth, 300); i++) t += `${'  '.repeat(2 * i)}  - key: k${i}\n${'  '.repeat(2 * i)}    descriptors:\n`;
      return t;
    }
    default:
      return `domain: d\ndescriptors:\n${Array.from({ length: Math.min(depth, 400) }, (_, i) => `${' '.repeat(i)}- `).join('\n')}x\n`;
  }
}

describe('config fuzz (bounded)', () => {
  it('survives random mutations of every fixture, alias bombs and deep nesting', () => {
    const r = prng('config-fuzz-1');
    const base = seeds();
    // A fixed number of cases (the same files on every run), each bounded in CPU time by compileTimed.
    const started = cpuMs();
    const CASES = 60; // ~8 s of CPU: alias bombs (1 in 10) run up to the expansion budget
    for (let cases = 0; cases < CASES; cases++) {
      const kind = r.int(0, 9);
      const text = kind === 0 ? aliasBomb(r) : kind === 1 ? deepNesting(r) : mutate(r, r.pick(base));
      compileTimed(`case${cases}.yaml`, text);
    }
    console.log(`config fuzz: ${CASES} files in ${(cpuMs() - started).toFixed(0)} ms of CPU`);
  }, 90_000);

  it('refuses huge files quickly, whatever they contain', () => {
    compileTimed('huge.yaml', `domain: d\n# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    compileTimed('huge-aliases.yaml', `domain: d\nm: &a [${'x, '.repeat(400_000)}x]\n`);
  });

  it('reports bad encodings read from disk at file:line:col', async () => {
    const r = prng('config-fuzz-encoding');
    const dir = await tempDir();
    try {
      const valid = Buffer.from(readFileSync(FIXTURES + 'valid/matching.yaml'));
      for (let i = 0; i < 30; i++) {
        const bytes = Buffer.from(valid);
        for (let n = r.int(1, 4); n > 0; n--) bytes[r.int(0, bytes.length - 1)] = r.int(0x80, 0xff);
        await writeFile(join(dir, 'enc.yaml'), bytes);
        const started = cpuMs();
        const result = await loadConfigDir(dir, { mergeDomains: false });
        check('enc.yaml', result, cpuMs() - started, bytes.toString('latin1'));
        let utf8 = true;
        try {
          new TextDecoder('utf-8', { fatal: true }).decode(bytes);
        } catch {
          utf8 = false;
        }
        if (!utf8) {
          expect(result.ok).toBe(false);
          expect(!result.ok && result.errors[0]!.reason).toMatch(/^invalid UTF-8 \(byte 0x[89A-F][0-9A-F]\); rules files must be UTF-8$/);
        }
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
