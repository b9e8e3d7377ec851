/** The `ratelimit` command as users run it (a child process of bin/ratelimit.mjs). */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDescriptor } from '../../src/cli/query.js';
import { spawnService } from '../support/service-process.js';
import { startTestService, type TestService } from '../support/service.js';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rl-cli-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const dirs: string[] = [];
let t: TestService;
beforeAll(async () => {
  t = await startTestService({
    'edge.yaml':
      'domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute, requests_per_unit: 1, name: per-ip}\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1000}\n',
    'empty.yaml': 'domain: empty\n',
  });
});
afterAll(async () => {
  await t.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('ratelimit check', () => {
  it('prints a summary and exits 0 for valid rules', async () => {
    const dir = dirWith({
      'a.yaml': 'domain: a\ndescriptors:\n  - key: k\n    value: v\n    rate_limit: {unit: second, requests_per_unit: 1}\n',
      'b.yml': 'domain: b\n',
    });
    dirs.push(dir);
    const r = await run(['check', dir]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toBe(`${dir}: OK — 2 file(s), 2 domain(s): a, b\n`);
  });

  it('warns about keys envoyproxy/ratelimit ignores, and still exits 0', async () => {
    const dir = dirWith({
      'w.yaml': 'domain: w\ndescriptors:\n  - key: k\n    value: v\n    unit: second\n    rate_limit: {unit: minute, requests_per_unit: 1}\n',
    });
    dirs.push(dir);
    const r = await run(['check', dir]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      "warning: w.yaml:5:5: descriptors[0].unit: 'unit' has no effect here and is ignored, as envoyproxy/ratelimit ignores it ('unit' belongs in rate_limit)\n",
    );
    expect(r.stdout).toContain('OK — 1 file(s), 1 domain(s): w');
  });

  it('prints every error with file:line:col and exits 1', async () => {
    const dir = dirWith({
      'bad.yaml': 'domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minit, requests_per_unit: 1}\n  - key: j\n    rate_limt: {}\n',
      'dup.yaml': 'domain: a\n',
    });
    dirs.push(dir);
    const r = await run(['check', dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bad\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: .*minit/m);
    expect(r.stderr).toMatch(/^bad\.yaml:6:5: descriptors\[1\]\.rate_limt: /m);
    expect(r.stderr).toMatch(/^dup\.yaml:1:\d+: .*duplicate domain 'a'/m);
    expect(r.stderr).toMatch(/\d+ error\(s\) in /);
  });
});

describe('ratelimit query', () => {
  it('is a dry run by default: nothing is counted, and it says whether a request would be admitted', async () => {
    const dry = ['query', '--server', t.grpcAddress, '--admin', t.httpBase.slice('http://'.length), '--domain', 'edge', 'ip=5.6.7.8'];
    for (let i = 0; i < 2; i++) {
      const r = await run(dry);
      expect(r).toMatchObject({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(
        /^dry run, nothing counted \(--spend sends the real request\): a request of 1 hit\(s\) would be admitted\noverall: OK\n {2}\[0\] ip=5\.6\.7\.8: OK, 1\/minute \(per-ip\), remaining 0 after this request, reset in \d+s\n/,
      );
    }
    const two = await run([...dry, '--hits', '2']);
    expect(two.code).toBe(3);
    expect(two.stdout).toContain('a request of 2 hit(s) would be REJECTED');
    // The quota is still whole: the real request is admitted once, then the dry run says the next would not be.
    const spent = await run([...dry, '--spend']);
    expect(spent.code).toBe(0);
    expect(spent.stdout).toMatch(/^overall: OK\n {2}\[0\] ip=5\.6\.7\.8: OK, 1\/minute \(per-ip\), remaining 0/);
    const after = await run(dry);
    expect(after.code).toBe(3);
    expect(after.stdout).toContain('a request of 1 hit(s) would be REJECTED');
    const json = await run([...dry, '--json']);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ overall_code: 'OK', statuses: [{ code: 'OK', current_limit: { requests_per_unit: 1 } }] });
    expect((await run([...dry, '--spend', '--json'])).code).toBe(3);
  }, 120_000); // eight runs of the command, a few seconds each on a loaded machine

  it('shows the remaining quota after the request, as POST /json does (999 of 1000 for both)', async () => {
    const q = await run(['query', '--server', t.grpcAddress, '--domain', 'edge', 'user=bob']);
    expect(q).toMatchObject({ code: 0, stderr: '' });
    expect(q.stdout).toContain('[0] user=bob: OK, 1000/minute, remaining 999 after this request');
    const json = await run(['query', '--server', t.grpcAddress, '--domain', 'edge', 'user=bob', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ statuses: [{ limit_remaining: 999 }] });
    const res = await fetch(`${t.httpBase}/json`, {
      method: 'POST',
      body: JSON.stringify({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: 'bob' }] }] }),
    });
    expect(((await res.json()) as { statuses: { limitRemaining: number }[] }).statuses[0]!.limitRemaining).toBe(999);
    const three = await run(['query', '--server', t.grpcAddress, '--domain', 'edge', 'user=bob', '--hits', '3']);
    expect(three.stdout).toContain('remaining 997 after this request');
  });

  it('fails on a domain with no rules (a typo), listing the domains that have some', async () => {
    for (const domain of ['nope', 'empty']) {
      const r = await run(['query', '--server', t.grpcAddress, '--admin', t.httpBase.slice('http://'.length), '--domain', domain, 'x=y']);
      expect(r).toMatchObject({ code: 1, stdout: '' });
      expect(r.stderr).toBe(`query: domain '${domain}' has no rules on this server; domains with rules: edge\n`);
    }
    // the admin port cannot be read: an unverified "no rule matched" is not reported as success
    const blind = await run(['query', '--server', t.grpcAddress, '--admin', '127.0.0.1:1', '--domain', 'nope', 'x=y']);
    expect(blind.code).toBe(1);
    expect(blind.stderr).toContain('the loaded domains could not be read from http://127.0.0.1:1/rules');
  });

  it('says "no limit applies" for a descriptor no rule matches (not "remaining 0")', async () => {
    const r = await run(['query', '--server', t.grpcAddress, '--admin', t.httpBase.slice('http://'.length), '--domain', 'edge', 'path=/x']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('[0] path=/x: OK, no limit applies (no rule matched)\n');
    expect(r.stdout).not.toContain('remaining');
  });

  it('every command answers --help and -h with its usage (exit 0)', async () => {
    const usage: Record<string, RegExp> = {
      serve: /^usage: ratelimit serve /,
      check: /^usage: ratelimit check \[DIR\]/,
      query: /^usage: ratelimit query /,
      capacity: /^usage: ratelimit capacity /,
      help: /^usage: ratelimit <command>/,
      version: /^usage: ratelimit --version/,
    };
    const asks = [...Object.keys(usage).map((command) => [command, '--help']), ['capacity', '-h'], ['version', '-h']];
    const answers = [];
    for (let i = 0; i < asks.length; i += 2)
      answers.push(...(await Promise.all(asks.slice(i, i + 2).map(async ([command, flag]) => ({ command, flag, r: await run([command!, flag!]) })))));
    for (const { command, flag, r } of answers) {
      expect({ command, flag, code: r.code, stderr: r.stderr }).toEqual({ command, flag, code: 0, stderr: '' });
      expect(r.stdout).toMatch(usage[command!]!);
    }
    // after other words too
    const late = await run(['capacity', 'get', 'c', 'r', '--help']);
    expect(late).toMatchObject({ code: 0, stderr: '' });
    expect(late.stdout).toContain('get CLIENT RESOURCE WANTS');
    expect((await run(['--help'])).stdout).toContain('Every command answers --help');
  }, 120_000); // ten runs of the command, two at a time

  it('query --help and check --help print their usage (exit 0)', async () => {
    const q = await run(['query', '--help']);
    expect(q).toMatchObject({ code: 0, stderr: '' });
    expect(q.stdout).toMatch(/^usage: ratelimit query /);
    expect(q.stdout).toContain('--spend');
    const c = await run(['check', '--help']);
    expect(c).toMatchObject({ code: 0, stderr: '' });
    expect(c.stdout).toMatch(/^usage: ratelimit check \[DIR\]/);
    const bad = await run(['check', '--nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^check: unknown option --nope\n/);
  });

  it('explains usage errors (exit 2) and unreachable servers (exit 1)', async () => {
    expect((await run(['query', 'ip=1'])).code).toBe(2);
    const down = await run(['query', '--server', '127.0.0.1:1', '--domain', 'edge', 'ip=1', '--timeout-ms', '300']);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('127.0.0.1:1');
  });

  it('splits descriptors on unescaped commas', () => {
    expect(parseDescriptor('a=1,b=x\\,y,c=k=v')).toEqual([
      { key: 'a', value: '1' },
      { key: 'b', value: 'x,y' },
      { key: 'c', value: 'k=v' },
    ]);
    expect(() => parseDescriptor('novalue')).toThrow("'novalue' is not key=value");
  });
});

describe('ratelimit serve', () => {
  it('fails at start with every bad setting named', async () => {
    const r = await run(['serve', '--grpc-port', 'x'], { BACKEND: 'mysql' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--grpc-port: 'x' is not a whole number");
    expect(r.stderr).toContain("BACKEND: 'mysql' is not one of memory, redis");
  });

  it('refuses to start on invalid rules, naming them', async () => {
    const dir = dirWith({ 'x.yaml': 'domain: ""\n' });
    dirs.push(dir);
    const r = await run(['serve', '--grpc-port', '0', '--http-port', '0'], { CONFIG_DIR: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/rules in .* are invalid\n\s+x\.yaml:1:\d+: /);
  });

  it('warns in one line at start when the admin port (GET /rules, POST /json) listens beyond loopback, and not on loopback', async () => {
    const rules = dirWith({ 'e.yaml': 'domain: e\n' });
    dirs.push(rules);
    const warning = (stderr: string) => stderr.split('\n').filter((l) => l.includes('beyond loopback'));
    const open = await spawnService({ CONFIG_DIR: rules, HTTP_HOST: '0.0.0.0' }); // the default, as npm start binds
    await open.stop();
    const lines = warning(open.stderr());
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'warn',
      setting: 'HTTP_HOST',
      msg: expect.stringMatching(
        /^the admin port listens on 0\.0\.0\.0:0, beyond loopback: anyone who reaches it reads GET \/rules, the clients being limited \(GET \/top and the status page at \/, TOP_VALUES=plain\) and POST \/json \(JSON_API=check\); set HTTP_HOST=127\.0\.0\.1 /,
      ) as unknown,
    });
    const closed = await spawnService({ CONFIG_DIR: rules, HTTP_HOST: '127.0.0.1' });
    await closed.stop();
    expect(warning(closed.stderr())).toEqual([]);
  }, 60_000);
});
