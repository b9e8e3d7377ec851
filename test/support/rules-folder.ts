/** A folder of rule files under the system's temp dir, for a test or a helper that starts the service on it. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface RulesFolder {
  /** The folder's path. */
  readonly dir: string;
  /** Writes the files (name relative to the folder → text), replacing any of the same name; returns `dir`. */
  write(files: Readonly<Record<string, string>>): string;
  /** The path of `name` in the folder. */
  path(name: string): string;
}

/** A fresh rule folder under the system's temp dir; `remove()` deletes it and what it holds. */
export function rulesFolder(prefix = 'rl-rules-'): RulesFolder & { remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = (name: string): string => join(dir, name);
  return {
    dir,
    path,
    write(files) {
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(dirname(path(name)), { recursive: true });
        writeFileSync(path(name), text);
      }
      return dir;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
