/**
 * `npm run demo` (scripts/demo.ts) as a user runs it: it starts Envoy, the sidecar and an upstream and prints curl
 * commands, which this test runs as printed (bash, curl). Each shows on its own what the demo says it shows,
 * through both of Envoy's protocols: over ext_authz a 200, soft-limit warnings, a 429 with headers and body, a 303;
 * over the ratelimit filter (RateLimitService) Alice's 200 and Bob's 101st request, the README's 429. Envoy's own
 * stats say which filter asked. SIGINT (Ctrl-C) stops all three.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEnvoy, envoyBinary, parseStats } from '../support/envoy.js';
import { rawHttp } from '../support/http-raw.js';

const ROOT = join(import.meta.dirname, '../..');

/** Runs a printed command with bash; its stdout. */
function sh(command: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', ['-c', command], { timeout: 60_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${command}: ${err.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

/**
 * Waits, if need be, for the next minute of the clock, so that a command needing `seconds` runs inside one window
 * (the demo's windows turn over on the minute, and a count that straddles the turn starts again).
 */
async function withinOneMinute(seconds: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < seconds * 1000) await new Promise((r) => setTimeout(r, left + 50));
}

/** Status line, headers (lower-case names) and body of `curl -si` output. */
function parseCurl(text: string): { status: number; headers: Record<string, string>; body: string } {
  const [head, ...rest] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head!.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  return { status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

describeEnvoy('npm run demo', () => {
  let demo: ChildProcess;
  let output = '';
  let port = 0;
  let admin = 0;
  let metrics = '';
  let exited: Promise<number | null>;
  /** The printed command under a line containing `label`. */
  const command = (label: string): string => {
    const lines = output.split('\n');
    const at = lines.findIndex((l) => l.includes(label));
    expect(at, `no "${label}" in the demo's output:\n${output}`).toBeGreaterThanOrEqual(0);
    return lines[at + 1]!.trim();
  };
  const stats = async () => parseStats(await (await fetch(`http://127.0.0.1:${admin}/stats?filter=ratelimit|ext_authz`)).text());

  beforeAll(async () => {
    demo = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/demo.ts')], {
      cwd: ROOT,
      env: { ...process.env, ENVOY_BIN: envoyBinary()!.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    demo.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    demo.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    exited = new Promise((resolve) => demo.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`demo not ready in 90 s:\n${output}`)), 90_000);
      const check = () => {
        if (output.includes('demo ready')) {
          clearTimeout(timer);
          resolve();
        }
      };
      demo.stdout!.on('data', check);
      void exited.then((code) => reject(new Error(`demo exited (${code}):\n${output}`)));
    });
    port = Number(/Envoy listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)![1]);
    admin = Number(/admin http:\/\/127\.0\.0\.1:(\d+)/.exec(output)![1]);
    metrics = /metrics (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(output)![1]!;
  }, 120_000);
  afterAll(async () => {
    if (demo.exitCode === null && demo.signalCode === null) demo.kill('SIGKILL');
    await exited;
  });

  it('says which Envoy it uses, that windows turn over on the minute, and serves the README example as the ratelimit route', () => {
    expect(output).toMatch(/^Envoy \d+\.\d+\.\d+: \S+ \(ENVOY_BIN\)/m);
    expect(output).toContain('the windows turn over on the minute');
    const readme = /```yaml\n([\s\S]*?)```/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'))![1]!;
    expect(readFileSync(join(ROOT, 'scripts/demo/shop.yaml'), 'utf8').replace(/^#.*\n/gm, '')).toBe(readme);
  });

  it('over ext_authz: each printed command shows its answer on its own (200, soft warnings, 429, 303)', async () => {
    await withinOneMinute(20);
    const before = await stats();
    const hello = parseCurl(await sh(command('A 200 from the upstream')));
    expect(hello.status).toBe(200);
    expect(hello.body).toBe('hello from the upstream: GET /hello\n');
    expect(hello.headers['ratelimit-policy']).toBe('"demo.method_GET.path.remote_address";q=5;w=60');

    expect((await sh(command('Soft-limit warnings'))).split(/\r?\n/).filter((l) => l !== '')).toEqual([
      'HTTP/1.1 200 OK',
      'HTTP/1.1 200 OK',
      'HTTP/1.1 200 OK',
      'HTTP/1.1 200 OK',
      'x-ratelimit-soft-warning: "demo.method_GET.path.remote_address";soft=3;used=4',
      'HTTP/1.1 200 OK',
      'x-ratelimit-soft-warning: "demo.method_GET.path.remote_address";soft=3;used=5',
    ]);

    const limited = parseCurl(await sh(command('A 429 with retry-after')));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit']).toMatch(/^"demo\.method_GET\.path\.remote_address";r=0;t=\d+$/);
    expect(limited.headers['content-type']).toBe('application/json');
    expect(JSON.parse(limited.body)).toEqual({ error: 'too many requests', limit: '5 per 60s', retry_after: Number(limited.headers['retry-after']) });

    expect((await sh(command('A redirect to a slow-down page'))).trim().split('\n')).toEqual([
      '200 ',
      '200 ',
      expect.stringMatching(/^303 https:\/\/example\.com\/slow-down\?retry=\d+$/) as unknown,
    ]);
    const after = await stats();
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect({
      authzOk: delta('http.ingress.ext_authz.ok'),
      authzDenied: delta('http.ingress.ext_authz.denied'),
      ratelimit: delta('cluster.app.ratelimit.ok'),
    }).toEqual({ authzOk: 13, authzDenied: 2, ratelimit: 0 });
  }, 60_000); // up to 20 s waiting for a fresh minute

  it("over the ratelimit filter: Alice's 200, and Bob's 101st request in a minute gets the README's 429", async () => {
    await withinOneMinute(40);
    const before = await stats();
    const alice = parseCurl(await sh(command("Alice's first request")));
    expect(alice.status).toBe(200);
    expect(alice.headers['ratelimit']).toMatch(/^"shop\.user";r=99;t=\d+$/);
    const bob = parseCurl(await sh(command("Bob's 101st request")));
    expect(bob.status).toBe(429);
    const wait = Number(bob.headers['retry-after']);
    expect(wait).toBeGreaterThan(0);
    expect(bob.headers).toMatchObject({ 'ratelimit-policy': '"shop.user";q=100;w=60', ratelimit: `"shop.user";r=0;t=${wait}`, 'x-envoy-ratelimited': 'true' });
    expect(bob.body).toBe(`Too many requests: 100 per 60 s for user=bob. Retry in ${wait} s.\n`);
    const after = await stats();
    const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    expect({ ok: delta('cluster.app.ratelimit.ok'), over: delta('cluster.app.ratelimit.over_limit'), authz: delta('http.ingress.ext_authz.ok') }).toEqual({
      ok: 101,
      over: 1,
      authz: 0,
    });
  }, 120_000); // up to 40 s waiting for a fresh minute, and 101 curl processes

  it('stops Envoy, the sidecar and the upstream on Ctrl-C (SIGINT)', async () => {
    demo.kill('SIGINT');
    expect(await exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${admin}/ready`)).rejects.toThrow();
    await expect(fetch(metrics)).rejects.toThrow();
    await expect(rawHttp(port, 'GET', '/hello', {}, 2000)).rejects.toThrow();
  });
});
