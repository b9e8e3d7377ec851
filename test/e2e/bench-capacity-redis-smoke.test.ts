/**
 * The capacity benchmarks' Redis parts run end to end with tiny counts, so they cannot rot: bench/capacity.ts
 * with `--backend redis,redis2` prints the BACKEND=redis table with figures for one and two replicas (when h2load
 * and the real Doorman are there, as the whole benchmark needs them), and bench/capacity-redis-contention.ts
 * prints its two lines.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { doormanTool } from '../support/capacity-peers.js';

const run = promisify(execFile);

async function h2loadInstalled(): Promise<boolean> {
  try {
    await run('h2load', ['--version']);
    return true;
  } catch {
    return false;
  }
}

it('bench/capacity.ts --backend redis,redis2 prints the BACKEND=redis rows', async (ctx) => {
  if (doormanTool('doorman') === undefined || !(await h2loadInstalled())) ctx.skip();
  const args = ['--import', 'tsx', 'bench/capacity.ts', '--requests', '200', '--warmup', '50', '--rounds', '1', '--clients', '10', '--backend', 'redis,redis2'];
  const { stdout } = await run(process.execPath, args, { timeout: 170_000, maxBuffer: 1 << 22 });
  for (const replicas of ['1 replica', '2 replicas']) {
    const row = new RegExp(`^\\| 10 \\| ${replicas} \\| ([\\d,]+) \\| ([\\d,.]+) \\| ([\\d,.]+) \\|`, 'm').exec(stdout);
    expect(row, stdout).not.toBeNull();
    // req/s and the services' CPU are positive; Redis's few ms at 200 requests may round to 0 (/proc counts 10 ms ticks).
    const [rps, services, redis] = row!.slice(1, 4).map((x) => Number(x.replaceAll(',', '')));
    expect([rps! > 0, services! > 0, redis! >= 0]).toEqual([true, true, true]);
  }
}, 180_000);

it('bench/capacity-redis-contention.ts prints one line per replica count', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/capacity-redis-contention.ts', '--decisions', '640'], { timeout: 120_000 });
  const lines = stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { replicas: number; decisions: number; cpuUsPerDecision: number; roundTrips: number });
  expect(lines.map((l) => [l.replicas, l.decisions, l.cpuUsPerDecision > 0, l.roundTrips > 0])).toEqual([
    [1, 640, true, true],
    [2, 640, true, true],
  ]);
}, 130_000);
