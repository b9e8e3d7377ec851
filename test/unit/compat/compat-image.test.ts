/**
 * The image's own environment must not contradict a deployment written for envoyproxy/ratelimit: its ENV
 * lines plus the reference's docker-compose environment load without a conflict, and the rules come from the
 * deployment's RUNTIME_ROOT, not from the image (never the example rules baked into the image).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/settings/settings.js';

/** `ENV A=1 B=2` lines of the final stage of the Dockerfile (unquoted values, as ours are written). */
function imageEnv(): Record<string, string> {
  const text = readFileSync(join(import.meta.dirname, '../../../Dockerfile'), 'utf8');
  const finalStage = text.slice(text.lastIndexOf('\nFROM '));
  const env: Record<string, string> = {};
  for (const line of finalStage.split('\n').filter((l) => /^ENV\s/.test(l))) {
    for (const pair of line
      .replace(/^ENV\s+/, '')
      .trim()
      .split(/\s+/)) {
      const eq = pair.indexOf('=');
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

describe('the image with a reference deployment', () => {
  it("starts on the deployment's rules and Redis, not the image's defaults", () => {
    const compose = {
      USE_STATSD: 'false',
      LOG_LEVEL: 'debug',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: 'redis:6379',
      RUNTIME_ROOT: '/data',
      RUNTIME_SUBDIRECTORY: 'ratelimit',
    };
    const { settings } = loadSettings({ ...imageEnv(), ...compose });
    expect(settings).toMatchObject({ configDir: '/data/ratelimit/config', configAllFiles: true, backend: 'redis', redisUrl: 'redis://redis:6379' });
  });
});
