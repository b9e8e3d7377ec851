/**
 * Reloads never stall the requests being served: the new files are read, parsed and validated in a
 * worker thread, so while a large or hostile rule file reloads, decisions keep being answered promptly; a
 * reload that takes too long is stopped (CONFIG_LOAD_TIMEOUT_MS) and the last good rules stay.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { compileConfigFiles } from '../../src/config/index.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const rules = (n: number) => `domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: ${n}}\n`;

/** Valid, under 1 MiB, and slow to parse: one descriptor whose metadata is a list of 40 000 numbers. */
function slowRules(): string {
  const items = Array.from({ length: 40_000 }, (_, i) => String(i % 1000)).join(',');
  return `${rules(7)}    metadata: {big: [${items}]}\n`;
}

let t: TestService | undefined;
let client: RlsTestClient | undefined;
afterEach(async () => {
  client?.close();
  await t?.close();
  t = undefined;
});

const limitOf = async () => (await client!.ask('app', [[['user', 'u1']]], 0)).statuses[0]!.current_limit?.requests_per_unit;

/** Asks every 20 ms until `done` settles; returns the largest call latency seen. */
async function probeWhile(done: Promise<unknown>): Promise<{ maxLatencyMs: number; calls: number }> {
  let finished = false;
  void done.finally(() => (finished = true));
  let maxLatencyMs = 0;
  let calls = 0;
  while (!finished && calls < 2000) {
    const started = performance.now();
    await limitOf();
    maxLatencyMs = Math.max(maxLatencyMs, performance.now() - started);
    calls++;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { maxLatencyMs, calls };
}

describe('reload off the event loop', () => {
  it('keeps answering promptly while a large file is parsed and validated', async () => {
    t = await startTestService({ 'app.yaml': rules(3) });
    client = new RlsTestClient(t.grpcAddress);
    expect(await limitOf()).toBe(3);
    const text = slowRules();
    expect(Buffer.byteLength(text)).toBeLessThan(1024 * 1024);
    writeFileSync(join(t.dir, 'app.yaml'), text);

    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const reloadStarted = performance.now();
    const reload = t.service.rules.reload();
    const probe = await probeWhile(reload);
    const status = await reload;
    const reloadMs = performance.now() - reloadStarted;
    delay.disable();
    expect(status.ok).toBe(true);
    expect(await limitOf()).toBe(7);

    // The same work done on this thread, for scale: it would have stalled every request this long.
    const inline = performance.now();
    expect(compileConfigFiles([{ name: 'app.yaml', text }], { mergeDomains: false }).ok).toBe(true);
    const inlineMs = performance.now() - inline;

    const maxDelayMs = delay.max / 1e6;
    console.log(
      `reload ${reloadMs.toFixed(0)} ms, inline parse+compile ${inlineMs.toFixed(0)} ms; during the reload: ${probe.calls} calls, max latency ${probe.maxLatencyMs.toFixed(1)} ms, max event-loop delay ${maxDelayMs.toFixed(1)} ms`,
    );
    expect(probe.calls).toBeGreaterThan(3);
    expect(maxDelayMs).toBeLessThan(inlineMs / 2);
    expect(probe.maxLatencyMs).toBeLessThan(inlineMs / 2);
  }, 60_000);

  it('reports an alias bomb as a failed reload, keeps the last good rules and keeps answering', async () => {
    t = await startTestService({ 'app.yaml': rules(3) });
    client = new RlsTestClient(t.grpcAddress);
    let bomb = `${rules(9)}    metadata:\n      a: &a [x, x, x, x, x, x, x, x, x, x]\n`;
    for (const [prev, name] of [
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'd'],
      ['d', 'e'],
      ['e', 'f'],
      ['f', 'g'],
    ] as const) {
      bomb += `      ${name}: &${name} [${Array.from({ length: 10 }, () => `*${prev}`).join(', ')}]\n`;
    }
    writeFileSync(join(t.dir, 'app.yaml'), bomb);
    const reload = t.service.rules.reload();
    const probe = await probeWhile(reload);
    const status = await reload;
    expect(status.ok).toBe(false);
    expect(status.errors).toEqual([expect.stringMatching(/^app\.yaml:7:\d+: aliases expand to more than 1000000 nodes/) as string]);
    expect(await limitOf()).toBe(3);
    expect(probe.maxLatencyMs).toBeLessThan(1000);
  }, 60_000);

  it('stops a reload that takes longer than CONFIG_LOAD_TIMEOUT_MS and keeps the last good rules', async () => {
    t = await startTestService({ 'app.yaml': rules(3) }, { configLoadTimeoutMs: 50 });
    client = new RlsTestClient(t.grpcAddress);
    writeFileSync(join(t.dir, 'app.yaml'), slowRules());
    const status = await t.service.rules.reload();
    expect(status.ok).toBe(false);
    expect(status.errors).toEqual([`${t.dir}:1:1: loading the rules took longer than 50 ms (CONFIG_LOAD_TIMEOUT_MS); the load was stopped`]);
    expect(await limitOf()).toBe(3);
  }, 60_000);
});
