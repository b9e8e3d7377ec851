/**
 * What the loader (and the watcher's fingerprint) may read from a rules directory, and how bytes become text:
 * which names are rules files, that a file's real path stays inside the real directory (a symlink pointing out
 * of it is refused, so no outside content is ever echoed in errors, logs or /rules), and strict UTF-8.
 */
import { readdirSync, statSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { ConfigError } from '../config-error.js';

const YAML_NAME = /\.ya?ml$/i;

/** Which names of a rules directory are rules files (CONFIG_ALL_FILES, CONFIG_DOT_FILES). */
export interface FileSelection {
  /** Every name whatever its extension, in subdirectories too; default `*.yaml` / `*.yml` at the top level. */
  readonly allFiles?: boolean | undefined;
  /** With `allFiles`: names that start with a dot too. */
  readonly dotFiles?: boolean | undefined;
}

/**
 * `*.yaml` / `*.yml` by default; with `allFiles` every name, as envoyproxy/ratelimit loads every file of its
 * runtime directory whatever its extension. Hidden names (`.x`, editor swap files) only with `allFiles` and
 * `dotFiles`, as the reference loads them unless RUNTIME_IGNOREDOTFILES=true; Kubernetes' ConfigMap machinery
 * (`..data`, `..2024_…`) never: it holds the same files again.
 */
export function isConfigFileName(name: string, select: FileSelection = {}): boolean {
  if (name.startsWith('..') || (name.startsWith('.') && !(select.allFiles === true && select.dotFiles === true))) return false;
  return select.allFiles === true || YAML_NAME.test(name);
}

/** Most directory levels followed below the rules directory with `allFiles`. */
const MAX_SUBDIR_DEPTH = 8;

/**
 * The candidate names of a rules directory: the top level's, or with `allFiles` every file in subdirectories too
 * (`sub/file`), hidden ones as `dotFiles` says, as envoyproxy/ratelimit loads its runtime directory. The loader
 * lists with this one; the watcher's synchronous baseline with its twin below, which must walk alike.
 */
export async function listConfigNames(dir: string, select: FileSelection, prefix = '', depth = 0): Promise<string[]> {
  const names = (await readdir(join(dir, prefix))).filter((n) => isConfigFileName(n, select));
  if (select.allFiles !== true) return names;
  const out: string[] = [];
  for (const name of names) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const isDir =
      depth < MAX_SUBDIR_DEPTH &&
      (await stat(join(dir, rel)).then(
        (s) => s.isDirectory(),
        () => false,
      ));
    if (isDir) out.push(...(await listConfigNames(dir, select, rel, depth + 1)));
    else out.push(rel);
  }
  return out;
}

/** listConfigNames, synchronously (watcher.ts fingerprintConfigDirSync). */
export function listConfigNamesSync(dir: string, select: FileSelection, prefix = '', depth = 0): string[] {
  const names = readdirSync(join(dir, prefix)).filter((n) => isConfigFileName(n, select));
  if (select.allFiles !== true) return names;
  const out: string[] = [];
  for (const name of names) {
    const rel = prefix === '' ? name : `${prefix}/${name}`;
    const isDir = depth < MAX_SUBDIR_DEPTH && isDirectorySync(join(dir, rel));
    if (isDir) out.push(...listConfigNamesSync(dir, select, rel, depth + 1));
    else out.push(rel);
  }
  return out;
}

function isDirectorySync(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** True when `realPath` is `realDir` itself or below it (both already resolved with realpath). */
export function isInside(realDir: string, realPath: string): boolean {
  const rel = relative(realDir, realPath);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

export function outsideError(name: string): ConfigError {
  return new ConfigError({
    file: name,
    line: 1,
    column: 1,
    path: '',
    reason: 'refused: a symbolic link whose target is outside the config directory (only files inside CONFIG_DIR are read)',
  });
}

export function tooLargeError(name: string, size: number, max: number): ConfigError {
  return new ConfigError({
    file: name,
    line: 1,
    column: 1,
    path: '',
    reason: `file is ${size} bytes, more than the limit of ${max} (CONFIG_MAX_FILE_BYTES)`,
  });
}

const STRICT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const LENIENT = new TextDecoder('utf-8', { ignoreBOM: true });

/** The text of a file, or an error at the line and column of its first byte that is not UTF-8. */
export function decodeUtf8(name: string, bytes: Uint8Array): { text: string } | { error: ConfigError } {
  try {
    return { text: STRICT.decode(bytes) };
  } catch {
    const at = firstInvalidUtf8(bytes);
    const lineStart = bytes.lastIndexOf(0x0a, at - 1) + 1;
    let line = 1;
    for (let i = 0; i < lineStart; i++) if (bytes[i] === 0x0a) line++;
    const column = LENIENT.decode(bytes.subarray(lineStart, at)).length + 1;
    const byte = bytes[at]!.toString(16).toUpperCase().padStart(2, '0');
    return {
      error: new ConfigError({ file: name, line, column, path: '', reason: `invalid UTF-8 (byte 0x${byte}); rules files must be UTF-8` }),
    };
  }
}

/** Offset of the first byte that does not start or continue a well-formed UTF-8 sequence (bytes.length if none). */
export function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined || d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) return i;
    }
    i += need + 1;
  }
  return b.length;
}

/**
 * A directory without a single rules file is an error, not an empty rule set: a wrong CONFIG_DIR, a ConfigMap
 * mounted elsewhere, or rules named `*.json` or without an extension would otherwise run with no limits at all
 * and no word. (A rule set with no limits on purpose is a file with a domain and no descriptors.) `entries`:
 * the directory's names, to say what was passed over.
 */
export function noRulesError(dir: string, select: FileSelection, entries: readonly string[]): ConfigError {
  const allFiles = select.allFiles === true;
  const visible = entries.filter((n) => isConfigFileName(n, { allFiles: true, dotFiles: select.dotFiles })).sort();
  const wanted = allFiles ? (select.dotFiles === true ? 'no file' : 'no non-dot file') : 'no *.yaml or *.yml file';
  const shown = `${visible.slice(0, 5).join(', ')}${visible.length > 5 ? `, and ${visible.length - 5} more` : ''}`;
  const what = entries.length === 0 ? 'it is empty' : visible.length === 0 ? 'it holds only dot files, which are skipped' : `ignored: ${shown}`;
  const hint = allFiles || visible.length === 0 ? '' : '; rules files end in .yaml or .yml (CONFIG_ALL_FILES=true reads every file whatever its extension)';
  return new ConfigError({ file: dir, line: 1, column: 1, path: '', reason: `no rules file: the rules directory holds ${wanted} (${what})${hint}` });
}

/** Why the rules directory could not be listed, in words (no errno jargon, no stack). */
export function dirProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'the rules directory does not exist';
  if (code === 'ENOTDIR') return 'the rules directory is not a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'the rules directory cannot be read (permission denied)';
  return `cannot read the rules directory: ${err instanceof Error ? err.message : String(err)}`;
}
