/**
 * /bin/ratelimit of the image (bin/ratelimit-reference.sh): envoyproxy/ratelimit's command reads only its
 * environment and ignores arguments, and Envoy AI Gateway's own manifest passes it one
 * (`--quotaRateLimitServiceHost=...`): ours serves all the same, and still runs a command of ours when named.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const SCRIPT = join(import.meta.dirname, '../../bin/ratelimit-reference.sh');
const MJS = join(import.meta.dirname, '../../bin/ratelimit.mjs');
const ENV = {
  ...process.env,
  RATELIMIT_ENTRY: MJS,
  GRPC_HOST: '127.0.0.1',
  GRPC_PORT: '0',
  HTTP_HOST: '127.0.0.1',
  HTTP_PORT: '0',
  CONFIG_TYPE: 'GRPC_XDS_SOTW',
  CONFIG_GRPC_XDS_SERVER_URL: '127.0.0.1:1',
  FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
  LOG_FORMAT: 'json',
  SHUTDOWN_DRAIN_MS: '0',
};

it('serves when given an argument it does not know, as the reference ignores it, and says so once', async () => {
  const child = spawn('sh', [SCRIPT, '--quotaRateLimitServiceHost=envoy-ai-gateway-ratelimit.envoy-gateway-system'], {
    env: ENV,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 20_000);
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('ratelimit-sidecar started')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    void exited.then(() => resolve(false));
  });
  child.kill('SIGTERM');
  await exited;
  expect(started, err).toBe(true);
  expect(err).toContain('arguments ignored, as envoyproxy/ratelimit ignores them: --quotaRateLimitServiceHost=');
}, 30_000);

it('runs a command of ours when the first argument names one', () => {
  const out = spawnSync('sh', [SCRIPT, '--version'], { env: ENV, encoding: 'utf8', timeout: 20_000 });
  expect(out.status).toBe(0);
  expect(out.stdout).toMatch(/\d+\.\d+\.\d+/);
});
