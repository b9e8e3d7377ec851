import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { setHeapGrowingPercent } from '../../src/app/heap-growth.js';
import { loadSettings } from '../../src/settings/settings.js';

const run = promisify(execFile);
const MODULE = fileURLToPath(new URL('../../src/app/heap-growth.ts', import.meta.url));

/**
 * The factor V8 uses for the old generation's next limit after a full collection, as its GC trace prints it
 * ("[HeapController] Limit: old size: … KB, new limit: … KB (1.2)"), in a fresh process that set `percent` at
 * run time, as `serve` does.
 */
async function limitFactor(percent: number): Promise<string> {
  const script = `const { setHeapGrowingPercent } = await import(${JSON.stringify(MODULE)}); setHeapGrowingPercent(${percent});
    const keep = []; for (let i = 0; i < 100000; i++) keep.push({ i }); globalThis.gc(); if (keep.length === 0) console.log('');`;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--expose-gc', '--trace-gc-verbose', '--input-type=module', '-e', script], { maxBuffer: 1 << 24 });
  const m = /\[HeapController\] Limit: old size: \d+ KB, new limit: \d+ KB \(([\d.]+)\)/.exec(stdout);
  if (m === null) throw new Error(`no limit line in V8's trace:\n${stdout.slice(0, 2000)}`);
  return m[1]!;
}

describe('HEAP_GROWING_PERCENT', () => {
  it('is 25 by default, 0 allowed (V8 chooses)', () => {
    expect(loadSettings({}, []).settings.heapGrowingPercent).toBe(25);
    expect(loadSettings({ HEAP_GROWING_PERCENT: '0' }, []).settings.heapGrowingPercent).toBe(0);
    expect(() => loadSettings({ HEAP_GROWING_PERCENT: '-1' }, [])).toThrow(/HEAP_GROWING_PERCENT/);
  });

  it('sets the factor of the old generation limit at run time; 0 leaves V8 its own', async () => {
    expect(await limitFactor(25)).toBe('1.2'); // 1.25, as V8 prints it
    expect(await limitFactor(0)).not.toBe('1.2'); // V8's own: up to 4 for a small heap that is collected fast
  });

  it('refuses a value that is not a whole number ≥ 0', () => {
    expect(() => setHeapGrowingPercent(-1)).toThrow(/whole number/);
    expect(() => setHeapGrowingPercent(1.5)).toThrow(/whole number/);
  });
});
