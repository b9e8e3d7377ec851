/**
 * docs/capacity.md's worked example pastes as it is: its resource file loads, and its `npx ratelimit` commands,
 * run as written (only `--server` added, to reach the service on its free port), print the grants the page
 * states. No command in docs/capacity.md or docs/capacity-client.md calls a bare `ratelimit` (not on PATH after
 * `npm ci`), and a placeholder image is labelled "build it yourself" with its build command.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/vocab/clock.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = ['docs/capacity.md', 'docs/capacity-client.md'];
const page = (p: string): string => readFileSync(join(REPO, p), 'utf8');

function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

describe('docs/capacity.md worked example', () => {
  let dir: string;
  let ours: TestService;
  const doc = page('docs/capacity.md');
  const commands = blocks(doc, 'sh')[0]!
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.startsWith('npx ratelimit capacity '));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'capacity-doc-'));
    writeFileSync(join(dir, 'capacity.yaml'), blocks(doc, 'yaml')[0]!);
    ours = await startTestService({}, { capacityConfig: join(dir, 'capacity.yaml') }, systemClock as never);
  });

  afterAll(async () => {
    await ours?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('its commands print the grants the page states: 120 / 0 / 0, then 60 / 50 / 10', async () => {
    expect(commands).toHaveLength(4);
    const grants: string[] = [];
    for (const line of commands) {
      const args = line.split(/\s+/).slice(1);
      args.splice(2, 0, '--server', ours.grpcAddress);
      const { stdout } = await run('npx', args, { cwd: REPO, timeout: 30_000 });
      grants.push(...[...stdout.matchAll(/capacity (\d+(?:\.\d+)?) until/g)].map((m) => m[1]!));
    }
    expect(grants).toEqual(['120', '0', '0', '60', '50', '10']);
    expect(doc).toContain('60 / 50 / 10');
  });
});

describe('capacity docs paste as they are', () => {
  for (const p of PAGES) {
    it(`${p}: every ratelimit command goes through npx, every placeholder image says how to build it`, () => {
      const text = page(p);
      for (const block of blocks(text, 'sh')) for (const line of block.split('\n')) expect(line, line).not.toMatch(/^\s*ratelimit\s/);
      for (const m of text.matchAll(/`(ratelimit [a-z]+)[^`]*`/g)) expect(text.slice(Math.max(0, m.index - 4), m.index + 1), m[0]).toMatch(/npx /);
      for (const para of text.split(/\n\s*\n/)) if (para.includes('ghcr.io/example/')) expect(para).toMatch(/build it yourself[\s\S]*docker build/);
    });
  }
});
