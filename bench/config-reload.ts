/**
 * What a rules reload costs the event loop: the same directory loaded inline (loadConfigDir, as start-up and
 * `ratelimit check` do) and off-thread (loadConfigDirInWorker, as hot reload does), with a 10 ms timer ticking
 * meanwhile (its largest late tick is the stall). Prints the load time and the largest event-loop delay of each, for a large valid file and for the
 * alias-bomb fixture.
 *
 *   npx tsx bench/config-reload.ts [--items 40000] [--runs 3]
 */
import { mkdtempSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigDir, loadConfigDirInWorker } from '../src/config/index.js';
import type { CompileResult } from '../src/config/index.js';
import { benchArgs } from './lib/args.js';

const args = benchArgs('bench/config-reload.ts', { items: 'string', runs: 'string' });
const items = args.num('items', 40_000);
const runs = args.num('runs', 3);

const large = mkdtempSync(join(tmpdir(), 'bench-rules-'));
const list = Array.from({ length: items }, (_, i) => String(i % 1000)).join(',');
const text = `domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 7}\n    metadata: {big: [${list}]}\n`;
writeFileSync(join(large, 'app.yaml'), text);
const bomb = mkdtempSync(join(tmpdir(), 'bench-rules-'));
copyFileSync(join(import.meta.dirname, '../test/fixtures/config/limits/alias-bomb.yaml'), join(bomb, 'alias-bomb.yaml'));

/** Runs `load` while a 10 ms interval ticks; the largest gap between ticks beyond 10 ms is the event-loop stall. */
async function measure(load: () => Promise<CompileResult>): Promise<{ ms: number; maxDelayMs: number; ok: boolean }> {
  let last = performance.now();
  let maxDelayMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxDelayMs = Math.max(maxDelayMs, now - last - 10);
    last = now;
  }, 10);
  const started = performance.now();
  const result = await load();
  const ms = performance.now() - started;
  // Let the blocked timer fire once more: a stall shows only when the loop runs again.
  await new Promise((r) => setTimeout(r, 30));
  clearInterval(tick);
  return { ms, maxDelayMs, ok: result.ok };
}

const options = { mergeDomains: false, timeoutMs: 60_000 };
console.log(`large file: ${(Buffer.byteLength(text) / 1e6).toFixed(2)} MB (${items} metadata items); ${runs} runs each`);
for (const [label, dir] of [
  ['large file', large],
  ['alias bomb', bomb],
] as const) {
  for (let r = 0; r < runs; r++) {
    const inline = await measure(() => loadConfigDir(dir, options));
    const worker = await measure(() => loadConfigDirInWorker(dir, options));
    console.log(
      `${label} run ${r + 1}: inline ${inline.ms.toFixed(0)} ms (max event-loop delay ${inline.maxDelayMs.toFixed(0)} ms, ok=${inline.ok}); ` +
        `worker ${worker.ms.toFixed(0)} ms (max event-loop delay ${worker.maxDelayMs.toFixed(0)} ms, ok=${worker.ok})`,
    );
  }
}
rmSync(large, { recursive: true, force: true });
rmSync(bomb, { recursive: true, force: true });
