/**
 * `npx tsx bench/envoy.ts --smoke` runs end to end in seconds (tiny counts), so the through-Envoy benchmark
 * cannot rot: a row per variant with a throughput, and every answer a 2xx. Needs Envoy and h2load
 * (nghttp2-client); without h2load the test says so and checks nothing else, like bench-smoke.test.ts.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { describeEnvoy } from '../support/envoy.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const haveH2load = () => run('h2load', ['--version']).then(() => true, () => false);

describeEnvoy('bench/envoy.ts --smoke', () => {
  it('prints a row per variant with req/s, latencies and CPU per request', async (ctx) => {
    if (!(await haveH2load())) {
      process.stderr.write('bench/envoy.ts smoke: h2load not found (apt-get install nghttp2-client), not run\n');
      ctx.skip();
    }
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/envoy.ts', '--smoke'], { cwd: ROOT, timeout: 170_000, maxBuffer: 1 << 22 });
    const reference = existsSync(join(ROOT, '../shared/tools/envoy-ratelimit/ratelimit'));
    const names = ['(a) no rate-limit filter', '(b) this service, memory', '(c) this service, Redis', ...(reference ? ['(d) envoyproxy/ratelimit, Redis'] : [])];
    for (const name of names) {
      const row = stdout.split('\n').find((l) => l.startsWith(`| ${name} |`));
      expect(row, name).toBeDefined();
      const cells = row!.split('|').map((c) => c.trim());
      expect(Number(cells[2]!.replace(/,/g, '')), `${name} req/s`).toBeGreaterThan(0);
    }
    expect(stdout).not.toMatch(/were not HTTP 2xx/);
  }, 180_000);
});
