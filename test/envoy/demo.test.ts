/**
 * `npm run demo` (scripts/demo.ts) as a user runs it: it starts Envoy, the sidecar and an upstream, prints curl
 * commands, and each shows what it says (a 200, a soft-limit warning, a 429 with headers and body, a 303); SIGINT
 * (Ctrl-C) stops all three.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEnvoy, envoyBinary } from '../support/envoy.js';
import { rawHttp } from '../support/http-raw.js';

const ROOT = join(import.meta.dirname, '../..');

describeEnvoy('npm run demo', () => {
  let demo: ChildProcess;
  let output = '';
  let port = 0;
  let admin = 0;
  let metrics = '';
  let exited: Promise<number | null>;

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

  it('prints the curl commands for each answer', () => {
    for (const line of [`curl -i http://127.0.0.1:${port}/hello`, `curl -s -i http://127.0.0.1:${port}/hello`, `-X POST http://127.0.0.1:${port}/login`]) expect(output).toContain(line);
  });

  it('shows a 200, then soft-limit warnings, then a 429 with retry-after, RateLimit headers and the JSON body', async () => {
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await rawHttp(port, 'GET', '/hello'));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers[0]!.body).toBe('hello from the upstream: GET /hello\n');
    expect(answers.map((a) => a.headers['x-ratelimit-soft-warning'] !== undefined)).toEqual([false, false, false, true, true, false]);
    const limited = answers[5]!;
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-policy']).toBe('"demo.method_GET.path_/hello.remote_address";q=5;w=60');
    expect(limited.headers['ratelimit']).toMatch(/^"demo\.method_GET\.path_\/hello\.remote_address";r=0;t=\d+$/);
    expect(limited.headers['content-type']).toBe('application/json');
    expect(JSON.parse(limited.body)).toEqual({ error: 'too many requests', limit: '5 per 60s', retry_after: Number(limited.headers['retry-after']) });
  });

  it('redirects the third sign-in of a minute to the slow-down page', async () => {
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await rawHttp(port, 'POST', '/login'));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 303]);
    expect(answers[2]!.headers.location).toMatch(/^https:\/\/example\.com\/slow-down\?retry=\d+$/);
  });

  it('stops Envoy, the sidecar and the upstream on Ctrl-C (SIGINT)', async () => {
    demo.kill('SIGINT');
    expect(await exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${admin}/ready`)).rejects.toThrow();
    await expect(fetch(metrics)).rejects.toThrow();
    await expect(rawHttp(port, 'GET', '/hello', {}, 2000)).rejects.toThrow();
  });
});
