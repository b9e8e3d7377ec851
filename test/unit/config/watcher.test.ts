/**
 * watchConfigDir against real directories and real file events (as a ConfigMap volume updates): a kubelet-style `..data` swap
 * (twice: the second swap is the one a per-file watch misses), a plain in-place write, a new file, the poll
 * fallback, and a directory that only appears later. Waits are bounded polls on the callback, never fixed sleeps
 * for the positive cases.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchConfigDir } from '../../../src/config/index.js';
import type { ConfigWatcher } from '../../../src/config/index.js';
import { fingerprintConfigDir, fingerprintConfigDirSync } from '../../../src/config/load/watcher.js';
import { ConfigMapDir, tempDir, waitFor } from './fs-helpers.js';

let dir: string;
let watcher: ConfigWatcher | undefined;
let changes: number;
let errors: unknown[];

beforeEach(async () => {
  dir = await tempDir();
  changes = 0;
  errors = [];
});
afterEach(async () => {
  watcher?.close();
  watcher = undefined;
  await rm(dir, { recursive: true, force: true });
});

function start(target: string, options: { debounceMs?: number; pollIntervalMs?: number } = {}): void {
  watcher = watchConfigDir(target, {
    debounceMs: options.debounceMs ?? 20,
    pollIntervalMs: options.pollIntervalMs ?? 0,
    onChange: () => changes++,
    onError: (err) => errors.push(err),
  });
}

describe('watchConfigDir', () => {
  it('signals a kubelet ..data swap, and the next one too', async () => {
    const cm = new ConfigMapDir(dir);
    await cm.update({ 'edge.yaml': 'domain: v1\n' });
    start(dir);

    await cm.update({ 'edge.yaml': 'domain: v2\n' });
    await waitFor(() => changes === 1, 5000, 'first swap');
    await cm.update({ 'edge.yaml': 'domain: v3\n', 'api.yaml': 'domain: api\n' });
    await waitFor(() => changes === 2, 5000, 'second swap');
    expect(errors).toEqual([]);
  });

  it('signals a plain in-place write and a new file', async () => {
    await writeFile(join(dir, 'edge.yaml'), 'domain: v1\n');
    start(dir);

    await writeFile(join(dir, 'edge.yaml'), 'domain: v2\n');
    await waitFor(() => changes === 1, 5000, 'in-place write');
    await writeFile(join(dir, 'new.yml'), 'domain: new\n');
    await waitFor(() => changes === 2, 5000, 'new file');
  });

  it('catches changes by polling when no event arrives in time', async () => {
    await writeFile(join(dir, 'edge.yaml'), 'domain: v1\n');
    // A debounce longer than the test: only the poll can report the change.
    start(dir, { debounceMs: 60_000, pollIntervalMs: 25 });
    await writeFile(join(dir, 'edge.yaml'), 'domain: v2\n');
    await waitFor(() => changes === 1, 5000, 'poll');
  });

  it('survives a directory that does not exist yet, and picks it up once it does', async () => {
    const later = join(dir, 'later');
    start(later, { pollIntervalMs: 25 });
    expect(errors).toHaveLength(1);
    await mkdir(later);
    await writeFile(join(later, 'edge.yaml'), 'domain: v1\n');
    await waitFor(() => changes >= 1, 5000, 'directory to appear');
  });

  it('stops signalling once closed', async () => {
    await writeFile(join(dir, 'edge.yaml'), 'domain: v1\n');
    start(dir, { pollIntervalMs: 10 });
    watcher!.close();
    await writeFile(join(dir, 'edge.yaml'), 'domain: v2\n');
    // A negative can only be observed over time: several debounce and poll periods.
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(changes).toBe(0);
  });
});

describe('fingerprintConfigDir', () => {
  it('changes with content, names and the set of files, and only with them', async () => {
    await writeFile(join(dir, 'a.yaml'), 'domain: a\n');
    const first = await fingerprintConfigDir(dir);
    await writeFile(join(dir, 'a.yaml'), 'domain: a\n');
    await writeFile(join(dir, 'notes.txt'), 'ignored');
    expect(await fingerprintConfigDir(dir)).toBe(first);
    await writeFile(join(dir, 'a.yaml'), 'domain: b\n');
    const second = await fingerprintConfigDir(dir);
    expect(second).not.toBe(first);
    await writeFile(join(dir, 'b.yaml'), '');
    expect(await fingerprintConfigDir(dir)).not.toBe(second);
  });

  it('reads the same fingerprint synchronously (the watcher baseline)', async () => {
    const cm = new ConfigMapDir(dir);
    await cm.update({ 'edge.yaml': 'domain: a\n' });
    expect(fingerprintConfigDirSync(dir)).toBe(await fingerprintConfigDir(dir));
    expect(fingerprintConfigDirSync(join(dir, 'missing'))).toBe(await fingerprintConfigDir(join(dir, 'missing')));
  });
});
