/**
 * Worker thread entry (started by load-in-worker.ts): reads and validates a rules directory, the half of a
 * load whose cost depends on file contents, and posts back plain data (RawFiles and error records): the
 * compiled index holds functions (glob matchers, describe) that cannot cross a thread boundary, so the main
 * thread builds it from this (compile.ts IndexBuild, linear in the descriptors). Each file is posted as soon as
 * it is validated, so the main thread indexes it while the next one is validated, in parts of about
 * PART_DESCRIPTORS descriptors, each serialized on its own: the main thread decodes them a part at a time
 * between requests, never a whole set of 100,000 descriptors in one go.
 */
import { serialize } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { contentVersion } from '../compile/compile.js';
import type { ConfigError } from '../config-error.js';
import type { ConfigLimits } from '../limits.js';
import { readConfigFiles } from './loader.js';
import type { RawDescriptor, RawFile } from '../raw.js';
import { validateFile } from '../validate/validate.js';

export interface WorkerRequest {
  readonly dir: string;
  /** Files given whole (rules over xDS): validated as they are, `dir` is not read. */
  readonly files?: readonly { readonly name: string; readonly text: string }[];
  readonly allFiles: boolean;
  readonly dotFiles: boolean;
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

/** One message per file, in load order (`parts`: its RawFile as v8-serialized FileParts), then one `done`. */
export type WorkerMessage =
  | { readonly kind: 'file'; readonly parts: readonly Uint8Array[]; readonly errors: readonly ErrorRecord[]; readonly warnings: readonly ErrorRecord[] }
  | { readonly kind: 'done'; readonly readErrors: readonly ErrorRecord[]; readonly version: string };

/** Some top-level descriptors of a file; its first part also has the rest of the file (`head`). */
export interface FilePart {
  readonly head?: Omit<RawFile, 'descriptors'>;
  readonly descriptors: readonly RawDescriptor[];
}

/** Descriptors (nested ones included) per part: a few ms to decode. */
const PART_DESCRIPTORS = 1000;

function countDescriptors(d: RawDescriptor): number {
  let n = 1;
  for (const c of d.descriptors) n += countDescriptors(c);
  return n;
}

/** The parts of `file`; a top-level descriptor is never split, however many it nests. */
function partsOf(file: RawFile): Uint8Array[] {
  const { descriptors, ...head } = file;
  const parts: Uint8Array[] = [];
  let part: RawDescriptor[] = [];
  let size = 0;
  const flush = () => {
    parts.push(serialize({ ...(parts.length === 0 ? { head } : {}), descriptors: part } satisfies FilePart));
    part = [];
    size = 0;
  };
  for (const d of descriptors) {
    part.push(d);
    size += countDescriptors(d);
    if (size >= PART_DESCRIPTORS) flush();
  }
  if (part.length > 0 || parts.length === 0) flush();
  return parts;
}

const record = (e: ConfigError): ErrorRecord => ({ file: e.file, line: e.line, column: e.column, path: e.path, reason: e.reason });

const request = workerData as WorkerRequest;
const limits = request.limits; // complete: load-in-worker.ts filled in the defaults (limitsOf)
const { files, errors } =
  request.files !== undefined
    ? { files: request.files, errors: [] }
    : await readConfigFiles(request.dir, {
        allFiles: request.allFiles,
        dotFiles: request.dotFiles,
        allowEmpty: request.allowEmpty,
        maxFileBytes: limits.maxFileBytes,
      });
for (const f of files) {
  const v = validateFile(f.name, f.text, limits);
  const parts = partsOf(v.file);
  const message: WorkerMessage = { kind: 'file', parts, errors: v.errors.map(record), warnings: v.warnings.map(record) };
  // Moved, not copied, when a part owns its whole buffer.
  parentPort!.postMessage(
    message,
    parts.filter((p) => p.byteOffset === 0 && p.byteLength === p.buffer.byteLength).map((p) => p.buffer as ArrayBuffer),
  );
}
parentPort!.postMessage({ kind: 'done', readErrors: errors.map(record), version: contentVersion(files) } satisfies WorkerMessage);
