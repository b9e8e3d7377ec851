/**
 * Misconfigurations that used to run silently without limits must stop the start with one clear line (no
 * stack trace), and `ratelimit check` must fail on the rules ones (a missing
 * directory included). Each case runs the real command as an operator would.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');
const root = mkdtempSync(join(tmpdir(), 'rl-start-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const GOOD = 'domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n';

function dirWith(name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

/** Runs `ratelimit ARGS` with only the given environment (plus PATH), on free ports. */
function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { PATH: process.env.PATH ?? '', GRPC_HOST: '127.0.0.1', GRPC_PORT: '0', HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

const NO_YAML = (dir: string, what: string, hint = true) =>
  `${dir}:1:1: no rules file: the rules directory holds no *.yaml or *.yml file (${what})${hint ? '; rules files end in .yaml or .yml (CONFIG_ALL_FILES=true reads every file whatever its extension)' : ''}`;

describe('serve refuses to start, in one line, and check fails', () => {
  it('REDIS_URL without BACKEND=redis (counters would stay in memory, unshared)', async () => {
    const dir = dirWith('redis', { 'd.yaml': GOOD });
    const r = await run(['serve'], { CONFIG_DIR: dir, REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      "invalid settings:\n  REDIS_URL set, but BACKEND is not: counters would stay in this process's memory and Redis would never be used; set BACKEND=redis (or BACKEND=memory to keep counters in memory on purpose)\n",
    );
  });

  it('a CONFIG_DIR that does not exist: one line, no stack trace', async () => {
    const dir = join(root, 'missing');
    const r = await run(['serve'], { CONFIG_DIR: dir });
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(`cannot start: CONFIG_DIR ${dir}: the rules directory does not exist\n`);
    const c = await run(['check', dir], {});
    expect(c).toMatchObject({ code: 1, stderr: `${dir}:1:1: the rules directory does not exist\n1 error(s) in ${dir}\n` });
  });

  it.each([
    ['empty', {}, 'it is empty', false],
    ['json-only', { 'rules.json': '{"domain": "d"}' }, 'ignored: rules.json', true],
    ['no-extension', { rules: GOOD }, 'ignored: rules', true],
  ] as const)('a CONFIG_DIR without a rules file (%s)', async (name, files, what, hint) => {
    const dir = dirWith(name, files);
    const r = await run(['serve'], { CONFIG_DIR: dir });
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(`rules in ${dir} are invalid\n  ${NO_YAML(dir, what, hint)}\n`);
    const c = await run(['check', dir], {});
    expect(c).toMatchObject({ code: 1, stdout: '', stderr: `${NO_YAML(dir, what, hint)}\n1 error(s) in ${dir}\n` });
  });

  it('a rate_limit without requests_per_unit (it would reject everything)', async () => {
    const dir = dirWith('no-rpu', { 'd.yaml': 'domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minute\n' });
    const message =
      'd.yaml:5:7: descriptors[0].rate_limit.requests_per_unit: requests_per_unit is missing: without it the limit is 0 and rejects every request (as envoyproxy/ratelimit reads it); write requests_per_unit: 0 to block on purpose, or unlimited: true for no limit';
    const r = await run(['serve'], { CONFIG_DIR: dir });
    expect(r).toMatchObject({ code: 1, stdout: '' });
    expect(r.stderr).toBe(`rules in ${dir} are invalid\n  ${message}\n`);
    const c = await run(['check', dir], {});
    expect(c).toMatchObject({ code: 1, stdout: '', stderr: `${message}\n1 error(s) in ${dir}\n` });
  });
});
