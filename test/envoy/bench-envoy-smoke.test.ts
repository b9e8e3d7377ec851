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
import { latencyProblems, tableRow } from '../support/bench-table.js';
import { describeEnvoy } from '../support/envoy.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const haveH2load = () =>
  run('h2load', ['--version']).then(
    () => true,
    () => false,
  );

describeEnvoy('bench/envoy.ts --smoke', () => {
  it('prints a row per variant with req/s, latencies and CPU per request', async (ctx) => {
    if (!(await haveH2load())) {
      process.stderr.write('bench/envoy.ts smoke: h2load not found (apt-get install nghttp2-client), not run\n');
      ctx.skip();
    }
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/envoy.ts', '--smoke'], { cwd: ROOT, timeout: 170_000, maxBuffer: 1 << 22 });
    const reference = existsSync(join(ROOT, '../shared/tools/envoy-ratelimit/ratelimit'));
    const names = [
      '(a) no rate-limit filter',
      '(b) this service, memory',
      '(c) this service, Redis',
      ...(reference ? ['(d) envoyproxy/ratelimit, Redis'] : []),
    ];
    for (const name of names) {
      // variant | req/s | p50 | p99 | p99.9 | added p50 / p99 | Envoy CPU µs/req | service CPU µs/req
      const row = tableRow(stdout, name);
      expect(row, name).toBeDefined();
      const [rps, p50, p99, p999, , envoyUs] = row!;
      // 300 calls on loopback: a few hundred to some tens of thousands a second, never NaN or zero
      expect(rps, `${name} req/s`).toBeGreaterThanOrEqual(50);
      expect(rps, `${name} req/s`).toBeLessThan(200_000);
      // every call answered within the rate-limit filter's 1 s timeout plus Envoy's own time
      expect(latencyProblems(name, [p50!, p99!, p999!], 2000)).toEqual([]);
      expect(envoyUs, `${name}: Envoy CPU µs per request`).toBeGreaterThan(0);
    }
    expect(stdout).toMatch(/h2load 300 requests per round, 4 clients × 4 streams, 1 round\(s\)/);
    expect(stdout).not.toMatch(/were not HTTP 2xx/);
    expect(stdout).not.toMatch(/Envoy counted \d+ answers that were not OK/);
  }, 180_000);
});
