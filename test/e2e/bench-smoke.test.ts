/**
 * `npm run bench -- --smoke` runs end to end (seconds, tiny counts), so the benchmark cannot rot: the table
 * and the JSON come out with the engine rows and the bytes-per-key figure, and the gRPC rows when h2load is
 * installed (the suite does not require it; the benchmark then says the rows were skipped).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { REFERENCE_START } from '../../bench/lib/reference.js';
import { latencyProblems, tableRow } from '../support/bench-table.js';

const run = promisify(execFile);

it('npm run bench -- --smoke prints the table and writes the JSON', async () => {
  const json = join(tmpdir(), `bench-smoke-${process.pid}.json`);
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--json', json], { timeout: 170_000, maxBuffer: 1 << 22 });
    expect(stdout).toMatch(/\| scenario \| descriptors \| req\/s/);
    expect(stdout).toMatch(/memory store at 20,000 keys: \d+ bytes of heap \+ buffers per key/);
    const result = JSON.parse(readFileSync(json, 'utf8')) as {
      rows: { scenario: string; rps: number[]; ratios: number[] }[];
      notes: string[];
      redisSideBySide: { samples: Record<string, Record<string, { rps: number; cpuUs: number; redisCpuUs: number; ok: number; sent: number }[]>> } | null;
    };
    const h2load = !result.notes.some((n) => n.startsWith('h2load not found'));
    if (h2load) {
      const lean = result.rows.find((r) => r.scenario === 'this service, memory store, lean transport')!;
      // 2,000 calls on loopback: hundreds to tens of thousands a second, the ratio to the no-op server near 1
      expect(lean.rps[0]).toBeGreaterThanOrEqual(50);
      expect(lean.rps[0]).toBeLessThan(200_000);
      expect(lean.ratios[0]).toBeGreaterThan(0.05);
      expect(lean.ratios[0]).toBeLessThan(50);
      // scenario | descriptors | req/s | p50 | p99 | p99.9 | server CPU µs/req | ...
      const [, rps, p50, p99, p999, cpuUs] = tableRow(stdout, 'this service, memory store, lean transport')!;
      expect(rps).toBeCloseTo(lean.rps[0]!, -1);
      expect(latencyProblems('lean, 1 descriptor', [p50!, p99!, p999!], 5000)).toEqual([]);
      expect(cpuUs, 'server CPU µs per request').toBeGreaterThan(0);
      expect(result.notes.some((n) => /Redis round trips per request .*: \d/.test(n))).toBe(true);
      expect(result.notes.filter((n) => n.includes('not HTTP 200'))).toEqual([]);
      // the Redis side by side with envoyproxy/ratelimit, when the reference binary is there
      if (existsSync(REFERENCE_START)) {
        expect(stdout).toMatch(/## Redis, side by side with envoyproxy\/ratelimit/);
        const side = result.redisSideBySide!;
        for (const key of ['reference', 'ours']) {
          for (const shape of ['1 descriptor', '3 descriptors']) {
            const s = side.samples[key]![shape]![0]!;
            expect([s.rps > 0, s.cpuUs > 0, s.redisCpuUs > 0, s.ok]).toEqual([true, true, true, s.sent]);
          }
        }
        expect(stdout).toMatch(/\| \+1 descriptor \(marginal\) \| this service/);
        expect(stdout).toMatch(/fixed 400 req\/s: p99 [\d.]+ ms \| envoyproxy/);
      }
    }
    const engine = result.rows.filter((r) => r.scenario.startsWith('engine,'));
    if (!result.notes.some((n) => n.includes('rate-limiter-flexible is not installed'))) expect(engine.map((r) => r.ratios[0]! > 0)).toEqual([true, true]);
  } finally {
    rmSync(json, { force: true });
  }
}, 180_000);
