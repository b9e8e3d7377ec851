/**
 * No password or ACL secret in any error or log. `ratelimit serve` is run as users run it, with
 * REDIS_URLs that are invalid in different ways and carry a password; stderr must name the problem and
 * show the URL with its credentials masked.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '../../bin/ratelimit.mjs');
const dir = mkdtempSync(join(tmpdir(), 'rl-secrets-'));
writeFileSync(join(dir, 'edge.yaml'), 'domain: edge\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(env: Record<string, string>, args: string[] = []): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, 'serve', ...args],
      {
        env: {
          ...process.env,
          CONFIG_DIR: dir,
          CONFIG_WATCH: 'false',
          GRPC_HOST: '127.0.0.1',
          GRPC_PORT: '0',
          HTTP_HOST: '127.0.0.1',
          HTTP_PORT: '0',
          BACKEND: 'redis',
          ...env,
        },
        timeout: 20_000,
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, output: stdout + stderr }),
    );
  });
}

describe('ratelimit serve never prints a Redis password', () => {
  it.each([
    [
      'an out-of-range port',
      'redis://admin:Sup3rS3cret@redis.internal:99999',
      'Sup3rS3cret',
      "Redis URL 'redis://admin:***@redis.internal:99999' is not a URL",
    ],
    ['a password holding @ and / unencoded', 'redis://:pa@ss/w0rd@127.0.0.1:6379/x', 'w0rd', "Redis URL 'redis://:***@127.0.0.1:6379/x'"],
    ['a single slash after the scheme', 'redis:/user:hunter2xyz@127.0.0.1', 'hunter2xyz', "Redis URL 'redis:***@127.0.0.1'"],
    ['the wrong scheme', 'http://u:topsecret42@h:1', 'topsecret42', "Redis URL 'http://u:***@h:1' must start with redis://"],
  ])('REDIS_URL with %s', async (_what, url, secret, message) => {
    const r = await serve({ REDIS_URL: url });
    expect(r.code).toBe(1);
    expect(r.output).toContain(message);
    expect(r.output).not.toContain(secret);
  });

  it('in the logs of a service whose Redis is down (a password holding an unencoded @)', async () => {
    const r = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [BIN, 'serve'], {
        env: {
          ...process.env,
          CONFIG_DIR: dir,
          CONFIG_WATCH: 'false',
          GRPC_HOST: '127.0.0.1',
          GRPC_PORT: '0',
          HTTP_HOST: '127.0.0.1',
          HTTP_PORT: '0',
          BACKEND: 'redis',
          REDIS_URL: 'redis://app:pw@leak9@127.0.0.1:1',
          REDIS_CONNECT_TIMEOUT_MS: '200',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('ratelimit-sidecar started')) child.kill('SIGTERM');
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(output);
      });
    });
    expect(r).toContain('Redis cannot decide yet');
    expect(r).toContain('redis://app:***@127.0.0.1:1');
    expect(r).not.toContain('leak9');
  });

  it('in the usage error for a mistyped flag that carries a URL', async () => {
    const r = await serve({}, ['--redis-ur1', 'redis://:flagsecret9@127.0.0.1:1']);
    expect(r.code).toBe(2);
    expect(r.output).toContain('serve: unknown arguments: --redis-ur1 redis://:***@127.0.0.1:1');
    expect(r.output).not.toContain('flagsecret9');
  });
});
