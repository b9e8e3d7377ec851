/**
 * `npx tsx bench/envoy-gc-trace.ts --smoke` runs end to end in seconds, so the GC trace behind the through-Envoy
 * tail cannot rot: a round with a throughput, and the scavenges read from V8's trace of the built service.
 */
import { execFile } from 'node:child_process';
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

describeEnvoy('bench/envoy-gc-trace.ts --smoke', () => {
  it('prints the round and the collections V8 traced', async (ctx) => {
    if (!(await haveH2load())) {
      process.stderr.write('bench/envoy-gc-trace.ts smoke: h2load not found (apt-get install nghttp2-client), not run\n');
      ctx.skip();
    }
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/envoy-gc-trace.ts', '--smoke', '--backend', 'memory'], {
      cwd: ROOT,
      timeout: 170_000,
      maxBuffer: 1 << 22,
    });
    // round | req/s | p50 | p99 | p99.9 | max
    const [rps, p50, p99, p999, max] = tableRow(stdout, '1') ?? [];
    expect(rps, 'req/s').toBeGreaterThanOrEqual(50);
    expect(rps, 'req/s').toBeLessThan(200_000);
    expect(latencyProblems('round 1', [p50!, p99!, p999!], 2000)).toEqual([]);
    expect(max, 'max ms (one decimal printed)').toBeGreaterThanOrEqual(p999! - 0.05);
    expect(stdout).toMatch(/1 × 300 requests, 16 clients × 4 streams/);
    // collection | count | per 20,000 requests | ...: a whole count, and the rate is that count scaled
    const [count, per20k] = tableRow(stdout, 'scavenge (young)') ?? [];
    expect(Number.isInteger(count), `scavenges counted: ${count}`).toBe(true);
    expect(per20k).toBeCloseTo((count! * 20_000) / 300, 0);
  }, 180_000);
});
