/**
 * Regression: a SIGTERM sent as soon as the start line appears used to kill the process by the default
 * action about half the time (the handlers were installed after the line was written). It must drain:
 * still alive (NOT_SERVING) after the first signal, exit 0 after the second. Five tries per run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnService } from '../support/service-process.js';

const dir = mkdtempSync(join(tmpdir(), 'rl-signal-'));
writeFileSync(join(dir, 'x.yaml'), 'domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('drains on a SIGTERM sent right after the start line, and exits 0 on the second', async () => {
  const outcomes: string[] = [];
  for (let i = 0; i < 5; i++) {
    const svc = await spawnService({ CONFIG_DIR: dir, SHUTDOWN_DRAIN_MS: '30000', SHUTDOWN_GRACE_MS: '500' });
    const exited = new Promise<string>((resolve) => svc.child.once('exit', (code, signal) => resolve(`exit ${code ?? signal}`)));
    svc.child.kill('SIGTERM');
    const first = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('draining'), 300))]);
    if (first === 'draining') svc.child.kill('SIGTERM');
    outcomes.push(`${first}, then ${await exited}`);
  }
  expect(outcomes).toEqual(Array(5).fill('draining, then exit 0'));
}, 60_000);
