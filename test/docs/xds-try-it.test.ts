/**
 * docs/xds.md's "Try it" block runs as written: bash runs it from the repository's root, with its ports (18001,
 * 8081, 8080) and its files in /tmp moved to free ones so that it cannot meet another run, and prints the three
 * answers the page shows. Everything it starts is in one process group, ended afterwards.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../support/redis.js';

const ROOT = join(import.meta.dirname, '../..');
const PAGE = readFileSync(join(ROOT, 'docs/xds.md'), 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'xds-try-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function block(): string {
  const m = /<!-- xds-try-it:begin -->\n```sh\n([\s\S]*?)```\n<!-- xds-try-it:end -->/.exec(PAGE);
  if (!m) throw new Error('docs/xds.md has no xds-try-it block');
  return m[1]!;
}

it('docs/xds.md "Try it" applies the set over xDS and answers OK, OK, OVER_LIMIT', { timeout: 240_000 }, async () => {
  const text = block();
  const expected = [...text.matchAll(/^# (overall: .*)$/gm)].map((m) => m[1]);
  expect(expected).toEqual(['overall: OK', 'overall: OK', 'overall: OVER_LIMIT']);
  const [xds, grpc, http] = [await freePort(), await freePort(), await freePort()];
  const script = text
    .replaceAll('18001', String(xds))
    .replaceAll('GRPC_PORT=8081', `GRPC_PORT=${grpc}`)
    .replaceAll('127.0.0.1:8081', `127.0.0.1:${grpc}`)
    .replaceAll('HTTP_PORT=8080', `HTTP_PORT=${http}`)
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${http}`)
    .replaceAll('/tmp/', `${dir}/`);
  // bounded: the readiness loop gives up after 120 s
  const bounded = script.replace('until curl', 'for t in $(seq 600); do curl').replace('; do sleep 0.2; done', ' && break; sleep 0.2; done');
  const child = spawn('bash', ['-c', bounded], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, HTTP_HOST: '127.0.0.1' },
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', () => undefined);
  try {
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group has ended already
    }
  }
  expect(out.trim().split('\n')).toEqual(expected);
});
