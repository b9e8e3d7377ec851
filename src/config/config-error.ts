import type { ConfigErrorInfo } from './types.js';

/**
 * One configuration error with its position. `message` (and `toString()`) read
 * `file:line:col: path: reason`, the shape editors and CI annotators understand; `reason` is the bare text.
 * File-level errors (YAML syntax, a file that is not a mapping) have an empty path and read `file:line:col: reason`.
 */
export class ConfigError extends Error implements ConfigErrorInfo {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly path: string;
  readonly reason: string;

  constructor(info: { file: string; line: number; column: number; path: string; reason: string }) {
    super(formatConfigError(info));
    this.name = 'ConfigError';
    this.file = info.file;
    this.line = info.line;
    this.column = info.column;
    this.path = info.path;
    this.reason = info.reason;
  }

  override toString(): string {
    return this.message;
  }
}

function formatConfigError(e: { file: string; line: number; column: number; path: string; reason: string }): string {
  const where = `${e.file}:${e.line}:${e.column}`;
  return e.path === '' ? `${where}: ${e.reason}` : `${where}: ${e.path}: ${e.reason}`;
}

/** Orders errors by file (in load order), then line, then column, so output reads top to bottom. */
export function sortConfigErrors(errors: ConfigError[], fileOrder: readonly string[]): ConfigError[] {
  const rank = new Map(fileOrder.map((f, i) => [f, i] as const));
  return errors
    .map((e, i) => ({ e, i }))
    .sort((a, b) => (rank.get(a.e.file) ?? -1) - (rank.get(b.e.file) ?? -1) || a.e.line - b.e.line || a.e.column - b.e.column || a.i - b.i)
    .map((x) => x.e);
}
