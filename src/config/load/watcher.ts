/**
 * Watches a rules directory and signals when its rules files may have changed; the caller reloads (and keeps
 * its last good config when the new set is invalid). Designed for Kubernetes ConfigMap volumes (updated by an atomic `..data` symlink swap):
 *
 * - We watch the DIRECTORY, not the files: a ConfigMap update renames `..data` and never touches `edge.yaml`
 *   itself, and a watch on the file lands on an inode the kubelet deletes (the second update is then silent).
 *   Any event means "maybe changed"; we never filter on file names.
 * - One swap fires five or more events, so events are debounced; then the files are re-read by path (through
 *   the `..data` link) and their content hash compared with the last one, so onChange fires once per real change
 *   and never for a no-op (an editor touching a file, a swap to identical content).
 * - A periodic poll does the same hash comparison, covering missed events, filesystems without inotify and
 *   watchers that died; a watcher that errors is closed, reported and re-created at the next poll.
 */
import { readdirSync, readFileSync, realpathSync, statSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { decodeUtf8, dirProblem, isInside, listConfigNamesSync, noRulesError, outsideError, tooLargeError } from './file-policy.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { readConfigFiles } from './loader.js';
import type { ReadOptions } from './loader.js';

export interface WatchOptions extends ReadOptions {
  /** Quiet time after the last event before the directory is re-read (e.g. 200 ms). */
  readonly debounceMs: number;
  /** Poll period for the hash comparison fallback (e.g. 30 000 ms); 0 disables polling. */
  readonly pollIntervalMs: number;
  /** Called once per detected content change; the caller reloads. */
  readonly onChange: () => void;
  /** Watcher failures (they are survived: the watcher is re-created and polling goes on). */
  readonly onError?: (err: unknown) => void;
}

export interface ConfigWatcher {
  close(): void;
}

/** Content fingerprint of the rules files of `dir` (names, contents, and read failures). */
export async function fingerprintConfigDir(dir: string, options: ReadOptions = {}): Promise<string> {
  const { files, errors } = await readConfigFiles(dir, options);
  return fingerprint(
    files,
    errors.map((e) => e.message),
  );
}

/**
 * The same fingerprint, read synchronously: the baseline is taken inside watchConfigDir so that "watching"
 * starts when the call returns, leaving no window in which a change could slip in unseen.
 */
export function fingerprintConfigDirSync(dir: string, options: ReadOptions = {}): string {
  const files: { name: string; text: string }[] = [];
  const failures: string[] = [];
  const maxBytes = options.maxFileBytes ?? DEFAULT_LIMITS.maxFileBytes;
  try {
    const realDir = realpathSync.native(dir);
    const names = listConfigNamesSync(dir, options);
    names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (const name of names) {
      const path = join(dir, name);
      try {
        // Only a baseline: what the loader refuses (outside links, oversized files) is fingerprinted unread.
        const real = realpathSync.native(path);
        const info = statSync(real);
        if (!isInside(realDir, real)) failures.push(outsideError(name).message);
        else if (info.isFile() && info.size > maxBytes) failures.push(tooLargeError(name, info.size, maxBytes).message);
        else if (info.isFile()) {
          const decoded = decodeUtf8(name, readFileSync(real));
          if ('error' in decoded) failures.push(decoded.error.message);
          else files.push({ name, text: decoded.text });
        }
      } catch (err) {
        failures.push(`${name}:1:1: cannot read file: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (files.length === 0 && failures.length === 0) failures.push(noRulesError(dir, options, readdirSync(dir)).message);
  } catch (err) {
    failures.push(`${dir}:1:1: ${dirProblem(err)}`);
  }
  return fingerprint(files, failures);
}

function fingerprint(files: readonly { name: string; text: string }[], failures: readonly string[]): string {
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${Buffer.byteLength(f.name)}:${f.name}${Buffer.byteLength(f.text)}:${f.text}`);
  for (const message of failures) hash.update(`!${message}\n`);
  return hash.digest('hex');
}

/** Minimum wait before re-creating a watcher that reported an error. */
const RESTART_DELAY_MS = 1000;

export function watchConfigDir(dir: string, options: WatchOptions): ConfigWatcher {
  let closed = false;
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  // The state the caller has just loaded is the baseline.
  let last = fingerprintConfigDirSync(dir, options);

  const report = (err: unknown): void => {
    try {
      options.onError?.(err);
    } catch {
      // A failing error handler must not stop the watcher.
    }
  };

  const check = async (): Promise<void> => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      const current = await fingerprintConfigDir(dir, options);
      if (!closed && current !== last) {
        last = current;
        options.onChange();
      }
    } catch (err) {
      report(err);
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      await check();
    }
  };

  const schedule = (): void => {
    if (closed) return;
    if (debounce !== undefined) clearTimeout(debounce);
    debounce = setTimeout(() => {
      debounce = undefined;
      void check();
    }, options.debounceMs);
    debounce.unref();
  };

  const startWatcher = (): void => {
    try {
      const w = watch(dir, { persistent: false }, () => schedule());
      w.on('error', (err) => {
        report(err);
        w.close();
        if (watcher === w) watcher = undefined;
        schedule();
        // One delayed restart (the poll also restarts it): a watcher that fails again waits for the next poll
        // rather than spinning.
        const retry = setTimeout(
          () => {
            if (!closed && watcher === undefined) startWatcher();
          },
          Math.max(options.debounceMs, RESTART_DELAY_MS),
        );
        retry.unref();
      });
      watcher = w;
    } catch (err) {
      report(err);
    }
  };

  startWatcher();
  const poll =
    options.pollIntervalMs > 0
      ? setInterval(() => {
          if (watcher === undefined) startWatcher();
          void check();
        }, options.pollIntervalMs)
      : undefined;
  poll?.unref();

  return {
    close(): void {
      closed = true;
      if (debounce !== undefined) clearTimeout(debounce);
      if (poll !== undefined) clearInterval(poll);
      watcher?.close();
      watcher = undefined;
    },
  };
}
