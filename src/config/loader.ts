/**
 * Loading a rules directory: every `*.yaml` / `*.yml` at its top level, sorted by name, read through symlinks.
 *
 * Kubernetes ConfigMap volumes hold `..data` → `..2026_01_02_03_04_05.123/` and one symlink per key
 * (`edge.yaml` → `..data/edge.yaml`). Hidden entries (`..data`, the timestamp directories, editor swap files
 * such as `.edge.yaml.swp`) are skipped. The kubelet swaps `..data` atomically, but reading several files is not
 * atomic, so when `..data` exists we read its target before and after and start again if it moved in between:
 * a load never mixes files of two ConfigMap versions.
 */
import { readFile, readdir, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { compileConfigFiles } from './compile.js';
import type { CompileOptions, CompileResult } from './compile.js';
import { ConfigError } from './errors.js';

export interface ConfigFile {
  /** Relative to the directory. */
  readonly name: string;
  readonly text: string;
}

const CONFIG_FILE = /\.ya?ml$/i;
const MAX_ATTEMPTS = 5;

export interface FileSelection {
  /**
   * Every non-dot file whatever its extension, in non-dot subdirectories too (envoyproxy/ratelimit's runtime
   * directory; names then read `sub/file`); default: the *.yaml / *.yml files at the top level.
   */
  readonly allFiles?: boolean;
}

/** Subdirectory levels followed with allFiles (a bound, should symlinks make a loop). */
const MAX_DEPTH = 8;

/** Names (relative to `dir`) of the candidate rule files, directories expanded when allFiles is set. */
async function listNames(dir: string, selection: FileSelection, prefix = '', depth = 0): Promise<string[]> {
  const names = (await readdir(join(dir, prefix))).filter((name) => isConfigFileName(name, selection));
  if (selection.allFiles !== true) return names;
  const out: string[] = [];
  for (const name of names) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const isDir = depth < MAX_DEPTH && (await stat(join(dir, rel)).then((s) => s.isDirectory(), () => false));
    if (isDir) out.push(...(await listNames(dir, selection, rel, depth + 1)));
    else out.push(rel);
  }
  return out;
}

export function isConfigFileName(name: string, selection: FileSelection = {}): boolean {
  return !name.startsWith('.') && (selection.allFiles === true || CONFIG_FILE.test(name));
}

/** Reads the rules files of `dir`; unreadable files are reported by name (and left out). */
export async function readConfigFiles(dir: string, selection: FileSelection = {}): Promise<{ files: ConfigFile[]; errors: ConfigError[] }> {
  let result: { files: ConfigFile[]; errors: ConfigError[] } = { files: [], errors: [] };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const before = await dataTarget(dir);
    result = await readOnce(dir, selection);
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

async function readOnce(dir: string, selection: FileSelection): Promise<{ files: ConfigFile[]; errors: ConfigError[] }> {
  let names: string[];
  try {
    names = await listNames(dir, selection);
  } catch (err) {
    return { files: [], errors: [fileError(dir, `cannot read config directory: ${reason(err)}`)] };
  }
  names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const files: ConfigFile[] = [];
  const errors: ConfigError[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      // stat follows symlinks: a ConfigMap key is a link into ..data; a directory named x.yaml is not a file.
      if (!(await stat(path)).isFile()) continue;
      files.push({ name, text: await readFile(path, 'utf8') });
    } catch (err) {
      errors.push(fileError(name, `cannot read file: ${reason(err)}`));
    }
  }
  return { files, errors };
}

function fileError(file: string, message: string): ConfigError {
  return new ConfigError({ file, line: 1, column: 1, path: '', reason: message });
}

function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Reads and compiles a rules directory. All errors are reported together: unreadable files and every
 * validation error of the readable ones. An empty directory is a valid configuration with no domains.
 */
export async function loadConfigDir(dir: string, options: CompileOptions & FileSelection): Promise<CompileResult> {
  const { files, errors } = await readConfigFiles(dir, options);
  const compiled = compileConfigFiles(files, options);
  if (errors.length === 0) return compiled;
  return { ok: false, errors: [...errors, ...(compiled.ok ? [] : compiled.errors)] };
}
