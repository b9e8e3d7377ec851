/**
 * Worker thread entry (started by load-in-worker.ts): reads and validates a rules directory, the half of a
 * load whose cost depends on file contents, and posts back plain data (RawFiles and error records): the
 * compiled index holds functions (glob matchers, describe) that cannot cross a thread boundary, so the main
 * thread builds it from this (compile.ts indexValidatedFiles, linear in the descriptors).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { contentVersion } from './compile.js';
import type { ConfigError } from './errors.js';
import type { ConfigLimits } from './limits.js';
import { readConfigFiles } from './loader.js';
import type { RawFile } from './raw.js';
import { validateFile } from './validate.js';

export interface WorkerRequest {
  readonly dir: string;
  /** Files given whole (rules over xDS): validated as they are, `dir` is not read. */
  readonly files?: readonly { readonly name: string; readonly text: string }[];
  readonly allFiles: boolean;
  readonly allowEmpty: boolean;
  readonly limits: ConfigLimits;
}

export interface ErrorRecord {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly path: string;
  readonly reason: string;
}

export interface WorkerReply {
  readonly readErrors: readonly ErrorRecord[];
  readonly validated: readonly { file: RawFile; errors: readonly ErrorRecord[]; warnings: readonly ErrorRecord[] }[];
  readonly version: string;
}

const record = (e: ConfigError): ErrorRecord => ({ file: e.file, line: e.line, column: e.column, path: e.path, reason: e.reason });

const request = workerData as WorkerRequest;
const limits = request.limits; // complete: load-in-worker.ts filled in the defaults (limitsOf)
const { files, errors } = request.files !== undefined
  ? { files: request.files, errors: [] }
  : await readConfigFiles(request.dir, { allFiles: request.allFiles, allowEmpty: request.allowEmpty, maxFileBytes: limits.maxFileBytes });
const reply: WorkerReply = {
  readErrors: errors.map(record),
  validated: files.map((f) => {
    const v = validateFile(f.name, f.text, limits);
    return { file: v.file, errors: v.errors.map(record), warnings: v.warnings.map(record) };
  }),
  version: contentVersion(files),
};
parentPort!.postMessage(reply);
