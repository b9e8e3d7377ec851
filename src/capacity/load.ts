/** Reading the resource file from disk: a bounded read, then parseCapacityConfig. */
import { readFile, stat } from 'node:fs/promises';
import { ConfigError } from '../config/config-error.js';
import { DEFAULT_LIMITS } from '../config/limits.js';
import { parseCapacityConfig, type CapacityLoad } from './config.js';

export async function loadCapacityFile(file: string): Promise<CapacityLoad> {
  const fail = (reason: string): CapacityLoad => ({ ok: false, errors: [new ConfigError({ file, line: 1, column: 1, path: '', reason })] });
  try {
    const info = await stat(file);
    if (!info.isFile()) return fail('not a regular file');
    if (info.size > DEFAULT_LIMITS.maxFileBytes) return fail(`file larger than ${DEFAULT_LIMITS.maxFileBytes} bytes`);
    const text = new TextDecoder('utf-8', { fatal: true }).decode(await readFile(file));
    return parseCapacityConfig(file, text);
  } catch (err) {
    return fail(`cannot read file: ${err instanceof Error ? err.message : String(err)}`);
  }
}
