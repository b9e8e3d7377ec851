/**
 * Loading a rules directory: every `*.yaml` / `*.yml` at its top level (or, with `allFiles`, every non-hidden file
 * of it and of its non-hidden subdirectories),
 * sorted by name, read through symlinks that stay inside the directory.
 *
 * Kubernetes ConfigMap volumes hold `..data` → `..2026_01_02_03_04_05.123/` and one symlink per key
 * (`edge.yaml` → `..data/edge.yaml`). Hidden entries (`..data`, the timestamp directories, editor swap files
 * such as `.edge.yaml.swp`) are skipped. The kubelet swaps `..data` atomically, but reading several files is not
 * atomic, so when `..data` exists we read its target before and after and start again if it moved in between:
 * a load never mixes files of two ConfigMap versions.
 */
import { constants } from 'node:fs';
import { open, readdir, readlink, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { compileConfigFiles } from '../compile/compile.js';
import type { CompileOptions, CompileResult } from '../compile/compile.js';
import { ConfigError } from '../config-error.js';
import { decodeUtf8, dirProblem, isInside, listConfigNames, noRulesError, outsideError, tooLargeError, type FileSelection } from './file-policy.js';
import { DEFAULT_LIMITS, limitsOf } from '../limits.js';

export interface ConfigFile {
  /** Relative to the directory. */
  readonly name: string;
  readonly text: string;
}

export interface ReadOptions extends FileSelection {
  /** Files larger than this are refused unread (default 1 MiB, CONFIG_MAX_FILE_BYTES). */
  readonly maxFileBytes?: number;
  /**
   * A directory without any rules file is no error (default: it is). Only for a service that has other work than
   * the rules, e.g. a capacity server (CAPACITY_CONFIG) that answers no rate-limit request.
   */
  readonly allowEmpty?: boolean;
}

const MAX_ATTEMPTS = 5;

/**
 * Reads the rules files of `dir`. Unreadable files, files larger than the limit, files that are not UTF-8 and
 * symlinks whose target lies outside the directory are reported by name (and left out); the content of a file
 * outside the directory is never read.
 */
export async function readConfigFiles(dir: string, options: ReadOptions = {}): Promise<{ files: ConfigFile[]; errors: ConfigError[] }> {
  let result: { files: ConfigFile[]; errors: ConfigError[] } = { files: [], errors: [] };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const before = await dataTarget(dir);
    result = await readOnce(dir, options);
    if ((await dataTarget(dir)) === before) return result;
  }
  return result;
}

async function dataTarget(dir: string): Promise<string | undefined> {
  try {
    return await readlink(join(dir, '..data'));
  } catch {
    return undefined;
  }
}

async function readOnce(dir: string, options: ReadOptions): Promise<{ files: ConfigFile[]; errors: ConfigError[] }> {
  let names: string[];
  let realDir: string;
  try {
    realDir = await realpath(dir);
    names = await listConfigNames(dir, options);
  } catch (err) {
    return { files: [], errors: [fileError(dir, dirProblem(err))] };
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const maxBytes = options.maxFileBytes ?? DEFAULT_LIMITS.maxFileBytes;
  const files: ConfigFile[] = [];
  const errors: ConfigError[] = [];
  for (const name of names) {
    try {
      const read = await readInside(realDir, join(dir, name), maxBytes);
      if (read === 'not-a-file') continue;
      if (read === 'outside') {
        errors.push(outsideError(name));
        continue;
      }
      if (typeof read === 'number') {
        errors.push(tooLargeError(name, read, maxBytes));
        continue;
      }
      const decoded = decodeUtf8(name, read);
      if ('error' in decoded) errors.push(decoded.error);
      else files.push({ name, text: decoded.text });
    } catch (err) {
      errors.push(fileError(name, `cannot read file: ${reason(err)}`));
    }
  }
  if (files.length === 0 && errors.length === 0 && options.allowEmpty !== true) errors.push(noRulesError(dir, options, await readdir(dir).catch(() => [])));
  return { files, errors };
}

/**
 * The bytes of `path` when its real path (symlinks resolved: a ConfigMap key is a link into ..data) is a
 * regular file inside `realDir`; 'outside', 'not-a-file' (a directory named x.yaml), or its size when too large.
 * Reads at most maxBytes + 1 bytes, so a file growing while it is read cannot exceed the bound either.
 */
async function readInside(realDir: string, path: string, maxBytes: number): Promise<Uint8Array | 'outside' | 'not-a-file' | number> {
  const real = await realpath(path);
  if (!isInside(realDir, real)) return 'outside';
  // stat before open: opening a FIFO named x.yaml would wait for a writer.
  if (!(await stat(real)).isFile()) return 'not-a-file';
  const handle = await open(real, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) return 'not-a-file';
    if (info.size > maxBytes) return info.size;
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) {
        if (length > maxBytes) return length;
        break;
      }
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/**
 * Why `dir` cannot serve as the rules directory (missing, not a directory, unreadable), in one line without a
 * stack; undefined when it can. The service checks this before it starts watching the directory.
 */
export async function configDirProblem(dir: string): Promise<string | undefined> {
  try {
    await readdir(dir);
    return undefined;
  } catch (err) {
    return `${dir}: ${dirProblem(err)}`;
  }
}

function fileError(file: string, message: string): ConfigError {
  return new ConfigError({ file, line: 1, column: 1, path: '', reason: message });
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reads and compiles a rules directory. All errors are reported together: unreadable files and every
 * validation error of the readable ones. A directory without any rules file is an error (noRulesError).
 */
export async function loadConfigDir(dir: string, options: CompileOptions & ReadOptions): Promise<CompileResult> {
  const limits = limitsOf(options);
  const { files, errors } = await readConfigFiles(dir, {
    ...(options.allFiles !== undefined ? { allFiles: options.allFiles } : {}),
    ...(options.dotFiles !== undefined ? { dotFiles: options.dotFiles } : {}),
    ...(options.allowEmpty !== undefined ? { allowEmpty: options.allowEmpty } : {}),
    maxFileBytes: limits.maxFileBytes,
  });
  return withReadErrors(errors, compileConfigFiles(files, { ...options, limits }));
}

/** A compile result that also fails on the files that could not be read, listed first (loader and worker load). */
export function withReadErrors(readErrors: readonly ConfigError[], compiled: CompileResult): CompileResult {
  if (readErrors.length === 0) return compiled;
  return { ok: false, errors: [...readErrors, ...(compiled.ok ? [] : compiled.errors)] };
}
