/**
 * `npx tsx bench/envoy-gc-trace.ts --smoke` runs end to end in seconds, so the GC trace behind the through-Envoy
 * tail cannot rot: a round with a throughput, and the scavenges read from V8's trace of the built service.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { describeEnvoy } from '../support/envoy.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const haveH2load = () => run('h2load', ['--version']).then(() => true, () => false);

describeEnvoy('bench/envoy-gc-trace.ts --smoke', () => {
  it('prints the round and the collections V8 traced', async (ctx) => {
    if (!(await haveH2load())) {
      process.stderr.write('bench/envoy-gc-trace.ts smoke: h2load not found (apt-get install nghttp2-client), not run\n');
      ctx.skip();
    }
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/envoy-gc-trace.ts', '--smoke', '--backend', 'memory'], { cwd: ROOT, timeout: 170_000, maxBuffer: 1 << 22 });
    const round = stdout.split('\n').find((l) => l.startsWith('| 1 |'));
    expect(Number(round?.split('|')[2]?.trim().replace(/,/g, ''))).toBeGreaterThan(0);
    const scavenges = stdout.split('\n').find((l) => l.startsWith('| scavenge (young) |'));
    expect(scavenges).toBeDefined();
  }, 180_000);
});
