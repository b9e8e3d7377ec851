/**
 * `npm run bench -- --footprint --smoke` runs end to end (seconds, tiny counts), so the footprint benchmark
 * cannot rot: the built service starts and makes a decision (its start-up time and the CPU spent by then are
 * measured), its CPU at rest and RSS are read from /proc, and envoyproxy/ratelimit is measured beside it when
 * its binary is there; RSS after load needs h2load (the suite does not require it), and the through-Envoy table
 * that follows needs an Envoy too.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REFERENCE_START } from '../../bench/lib/reference.js';
import { envoyBinary } from '../support/envoy.js';

const run = promisify(execFile);

interface Figures {
  startup: number[];
  startupCpu: number[];
  idle?: number;
  rest?: number;
  after?: number;
}

it('npm run bench -- --footprint --smoke prints the footprint table and writes the JSON', async () => {
  const json = join(tmpdir(), `bench-footprint-smoke-${process.pid}.json`);
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--footprint', '--smoke', '--json', json], {
      timeout: 170_000,
      maxBuffer: 1 << 22,
    });
    expect(stdout).toMatch(/## Footprint/);
    expect(stdout).toMatch(/\| server \| start-up ms \(each\) \| CPU ms by then \| CPU at rest/);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { figures: Record<string, Figures>; notes: string[] };
    const ours = Object.entries(result.figures).find(([label]) => label.startsWith('this service'))![1];
    expect(ours.startup[0]).toBeGreaterThan(0);
    expect(ours.startupCpu[0]).toBeGreaterThan(0);
    expect(Number.isFinite(ours.idle)).toBe(true);
    expect(ours.rest).toBeGreaterThan(10);
    const h2load = !result.notes.some((n) => n.startsWith('h2load not found'));
    if (h2load) {
      expect(ours.after).toBeGreaterThan(10);
      expect(result.notes.filter((n) => n.includes('not HTTP 200'))).toEqual([]);
    }
    // With an Envoy, the through-Envoy table follows (bench/envoy.ts --smoke).
    if (envoyBinary() !== undefined && h2load) expect(stdout).toMatch(/^\| \(c\) this service, Redis \| [\d,]+ \|/m);
    if (existsSync(REFERENCE_START)) {
      const ref = result.figures['envoyproxy/ratelimit']!;
      expect([ref.startup[0]! > 0, ref.rest! > 0]).toEqual([true, true]);
    }
  } finally {
    rmSync(json, { force: true });
  }
}, 180_000);
