/** Temp directories laid out like a Kubernetes ConfigMap volume, and a bounded wait for real file events. */
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../../support/eventually.js';

export async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'ratelimit-config-'));
}

/**
 * A ConfigMap mount: `..<ts>/<files>`, `..data` → `..<ts>`, and `<name>` → `..data/<name>` per key.
 * `update` replays the kubelet's AtomicWriter steps (new dir, `..data_tmp` link, rename over `..data`,
 * remove the old dir); links of new keys are added before the swap and links of removed keys deleted after it.
 */
export class ConfigMapDir {
  private generation = 0;
  private current: string | undefined;
  private keys = new Set<string>();

  constructor(readonly dir: string) {}

  async update(files: Record<string, string>): Promise<void> {
    const ts = `..2026_11_21_23_00_0${this.generation++}.${Math.random().toString(36).slice(2, 8)}`;
    await mkdir(join(this.dir, ts));
    for (const [name, text] of Object.entries(files)) await writeFile(join(this.dir, ts, name), text);
    for (const name of Object.keys(files)) {
      if (!this.keys.has(name)) await symlink(join('..data', name), join(this.dir, name));
    }
    await symlink(ts, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    for (const name of this.keys) {
      if (!(name in files)) await rm(join(this.dir, name));
    }
    if (this.current !== undefined) await rm(join(this.dir, this.current), { recursive: true });
    this.current = ts;
    this.keys = new Set(Object.keys(files));
  }
}

/** Resolves once `check()` is true; rejects after `timeoutMs` (file events are real I/O, so we poll for them). */
export function waitFor(check: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  return eventually(check, { timeoutMs, what, intervalMs: 5 });
}
