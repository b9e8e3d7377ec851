import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { setHeapGrowingPercent } from '../../../src/app/heap-growth.js';
import { loadSettings } from '../../../src/settings/settings.js';

const run = promisify(execFile);
const MODULE = fileURLToPath(new URL('../../../src/app/heap-growth.ts', import.meta.url));

/**
 * The old generation's next limit after a full collection, KB, as V8's GC trace prints it ("[HeapController]
 * Limit: old size: … KB, new limit: … KB"), in a fresh process that set `percent` at run time, as `serve` does,
 * then kept 2,000,000 small objects alive through a full collection.
 */
async function nextLimitKb(percent: number): Promise<number> {
  const script = `const { setHeapGrowingPercent } = await import(${JSON.stringify(MODULE)}); setHeapGrowingPercent(${percent});
    const keep = []; for (let i = 0; i < 2000000; i++) keep.push({ i }); globalThis.gc(); if (keep.length === 0) console.log('');`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--expose-gc', '--trace-gc-verbose', '--input-type=module', '-e', script], {
    maxBuffer: 1 << 26,
  });
  const limits = [...stdout.matchAll(/\[HeapController\] Limit: old size: \d+ KB, new limit: (\d+) KB/g)];
  if (limits.length === 0) throw new Error(`no limit line in V8's trace:\n${stdout.slice(0, 2000)}`);
  return Number(limits.at(-1)![1]);
}

describe('HEAP_GROWING_PERCENT', () => {
  it('is 25 by default, 0 allowed (V8 chooses)', () => {
    expect(loadSettings({}, []).settings.heapGrowingPercent).toBe(25);
    expect(loadSettings({ HEAP_GROWING_PERCENT: '0' }, []).settings.heapGrowingPercent).toBe(0);
    expect(() => loadSettings({ HEAP_GROWING_PERCENT: '-1' }, [])).toThrow(/HEAP_GROWING_PERCENT/);
  });

  it('sets the factor of the old generation limit at run time; 0 leaves V8 its own', async () => {
    const [fixed, own] = [await nextLimitKb(25), await nextLimitKb(0)];
    // V8's own factor, for a small heap that is collected fast, lets it grow up to 4 times; 1.25 about half as far
    expect(fixed, `next limit with 25 %: ${fixed} KB, with V8's own factor: ${own} KB`).toBeLessThan(own * 0.75);
  });

  it('refuses a value that is not a whole number ≥ 0', () => {
    expect(() => setHeapGrowingPercent(-1)).toThrow(/whole number/);
    expect(() => setHeapGrowingPercent(1.5)).toThrow(/whole number/);
  });
});
