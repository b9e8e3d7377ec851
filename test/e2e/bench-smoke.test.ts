/**
 * `npm run bench -- --smoke` runs end to end (seconds, tiny counts), so the benchmark cannot rot: the table
 * and the JSON come out with the engine rows and the bytes-per-key figure, and the gRPC rows when h2load is
 * installed (the suite does not require it; the benchmark then says the rows were skipped).
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const run = promisify(execFile);

it('npm run bench -- --smoke prints the table and writes the JSON', async () => {
  const json = join(tmpdir(), `bench-smoke-${process.pid}.json`);
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--json', json], { timeout: 170_000, maxBuffer: 1 << 22 });
    expect(stdout).toMatch(/\| scenario \| descriptors \| req\/s/);
    expect(stdout).toMatch(/memory store at 20,000 keys: \d+ bytes of heap \+ buffers per key/);
    const result = JSON.parse(readFileSync(json, 'utf8')) as { rows: { scenario: string; rps: number[]; ratios: number[] }[]; notes: string[] };
    const h2load = !result.notes.some((n) => n.startsWith('h2load not found'));
    if (h2load) {
      const lean = result.rows.find((r) => r.scenario === 'this service, memory store, lean transport')!;
      expect(lean.rps[0]).toBeGreaterThan(0);
      expect(lean.ratios[0]).toBeGreaterThan(0);
      expect(result.notes.some((n) => /Redis round trips per request .*: \d/.test(n))).toBe(true);
      expect(result.notes.filter((n) => n.includes('not HTTP 200'))).toEqual([]);
    }
    const engine = result.rows.filter((r) => r.scenario.startsWith('engine,'));
    if (!result.notes.some((n) => n.includes('rate-limiter-flexible is not installed'))) expect(engine.map((r) => r.ratios[0]! > 0)).toEqual([true, true]);
  } finally {
    rmSync(json, { force: true });
  }
}, 180_000);
