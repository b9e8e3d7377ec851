/**
 * Hot reload through the real service: the directory watcher picks up a plain write and a Kubernetes-style
 * `..data` swap; a bad rule set keeps the last good one (reported at /rules and in metrics); counters survive.
 */
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.js';
import { RlsTestClient } from '../support/rls-client.js';
import { startTestService, type TestService } from '../support/service.js';

const rules = (n: number) => `domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: ${n}}\n`;

let t: TestService | undefined;
let client: RlsTestClient | undefined;
afterEach(async () => {
  client?.close();
  await t?.close();
  t = undefined;
});

const limitOf = async () => (await client!.ask('app', [[['user', 'u1']]], 0)).statuses[0]!.current_limit?.requests_per_unit;

async function rulesBody(): Promise<{ version: string; lastReload: { ok: boolean; errors: string[] } }> {
  return (await (await fetch(`${t!.httpBase}/rules`)).json()) as never;
}

describe('hot reload', () => {
  it('applies a plain in-place write, keeps counts, and keeps the last good rules on a bad write', async () => {
    t = await startTestService({ 'app.yaml': rules(3) }, { configWatch: true, configDebounceMs: 20, configPollIntervalMs: 200 });
    client = new RlsTestClient(t.grpcAddress);
    expect(await limitOf()).toBe(3); // counts 1

    writeFileSync(join(t.dir, 'app.yaml'), rules(5));
    await eventually(async () => (await limitOf()) === 5);
    // Counters survive a reload that only changes requests_per_unit: 1 (first) + 1 (each probe) used so far.
    const used = await client.ask('app', [[['user', 'u1']]]);
    expect(used.statuses[0]!.limit_remaining).toBeLessThan(4);

    const good = await rulesBody();
    writeFileSync(join(t.dir, 'app.yaml'), 'domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n');
    await eventually(async () => !(await rulesBody()).lastReload.ok);
    const bad = await rulesBody();
    expect(bad.version).toBe(good.version);
    expect(bad.lastReload.errors.join('\n')).toMatch(/^app\.yaml:4:\d+: descriptors\[0\]\.rate_limit\.unit: /m);
    expect(await limitOf()).toBe(5); // still the last good rules
    const metrics = await (await fetch(`${t.httpBase}/metrics`)).text();
    expect(metrics).toContain('ratelimit_config_last_reload_success 0');
    expect(metrics).toMatch(/ratelimit_config_reloads_total\{result="failure"\} [1-9]/);
  });

  it('keeps the last good rules when the directory is emptied (no rules file is a failed reload, not "no limits")', async () => {
    t = await startTestService({ 'app.yaml': rules(4) }, { configWatch: true, configDebounceMs: 20, configPollIntervalMs: 0 });
    client = new RlsTestClient(t.grpcAddress);
    expect(await limitOf()).toBe(4);
    rmSync(join(t.dir, 'app.yaml'));
    writeFileSync(join(t.dir, 'app.json'), rules(8));
    await eventually(async () => (await rulesBody()).lastReload.ok === false);
    expect((await rulesBody()).lastReload.errors).toEqual([
      `${t.dir}:1:1: no rules file: the rules directory holds no *.yaml or *.yml file (ignored: app.json); rules files end in .yaml or .yml (CONFIG_ALL_FILES=true reads every file whatever its extension)`,
    ]);
    expect(await limitOf()).toBe(4);
  });

  it('follows a Kubernetes ConfigMap ..data symlink swap', async () => {
    // A rules directory must hold a rules file to start; this one is replaced by the ConfigMap layout below.
    t = await startTestService({ 'app.yaml': rules(5) }, { configWatch: true, configDebounceMs: 20, configPollIntervalMs: 0 });
    client = new RlsTestClient(t.grpcAddress);
    expect(await limitOf()).toBe(5);
    rmSync(join(t.dir, 'app.yaml'));
    const dir = t.dir;
    // The kubelet's layout: ..<ts>/app.yaml, ..data -> ..<ts>, app.yaml -> ..data/app.yaml
    mkdirSync(join(dir, '..2026_11_21_00_00_00.1'));
    writeFileSync(join(dir, '..2026_11_21_00_00_00.1', 'app.yaml'), rules(7));
    symlinkSync('..2026_11_21_00_00_00.1', join(dir, '..data'));
    symlinkSync('..data/app.yaml', join(dir, 'app.yaml'));
    await eventually(async () => (await limitOf()) === 7);

    mkdirSync(join(dir, '..2026_11_21_00_01_00.2'));
    writeFileSync(join(dir, '..2026_11_21_00_01_00.2', 'app.yaml'), rules(9));
    symlinkSync('..2026_11_21_00_01_00.2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..2026_11_21_00_00_00.1'), { recursive: true });
    await eventually(async () => (await limitOf()) === 9);
  });
});
