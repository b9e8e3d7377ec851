/**
 * Vitest fixtures for what many tests need, set up only for the tests that name them and torn down after:
 *
 *   import { test } from '../../support/fixtures.js';
 *   test('counts on Redis', async ({ redis, rules }) => {
 *     const dir = rules.write({ 'limits.yaml': 'domain: d\n…' });
 *     …redis.url…
 *   });
 *
 * - `redis`: a redis-server of this file's own on a free port (started by the first test that names it, stopped
 *   after the file's last test); `redis.restart()`/`stopRedis()` for outage tests.
 * - `rules`: a fresh folder for rule files, per test, removed after it: `write(files)` (name → text) writes them
 *   (sub-folders included) and returns the folder's path; `path(name)` names a file in it.
 */
import { test as base } from 'vitest';
import { startRedis, type RedisServer } from './redis.js';
import { rulesFolder, type RulesFolder } from './rules-folder.js';

export interface Fixtures {
  readonly rules: RulesFolder;
  readonly redis: RedisServer;
}

// Vitest reads a fixture's dependencies from its first parameter's destructuring: these depend on none.
/* eslint-disable no-empty-pattern */
export const test = base.extend<Fixtures>({
  rules: async ({}, use) => {
    const folder = rulesFolder();
    try {
      await use(folder);
    } finally {
      folder.remove();
    }
  },
  redis: [
    async ({}, use) => {
      const server = await startRedis();
      try {
        await use(server);
      } finally {
        await server.stop();
      }
    },
    { scope: 'file' },
  ],
});
/* eslint-enable no-empty-pattern */

export const it = test;
