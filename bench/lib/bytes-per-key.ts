/**
 * Bytes per key of the memory store at N keys, measured by bench/memory-per-key.ts in a fresh process
 * (heap + array buffers growth after full GCs, divided by N); returns its line for fixed_window.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function bytesPerKey(keys: number): string {
  const script = fileURLToPath(new URL('../memory-per-key.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', script, '--child', String(keys), '--algorithm', 'fixed_window'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) return `not measured (${r.stderr.trim().split('\n').pop() ?? `exit ${r.status}`})`;
  const m = /heap\+buffers\/key=\s*(\d+) B.*rss\/key=\s*(-?\d+) B/.exec(r.stdout);
  return m ? `${m[1]} bytes of heap + buffers per key (rss ${m[2]} per key), fixed_window` : r.stdout.trim();
}
