/**
 * loadConfigDir off the event loop, for reloads of a running service: a worker thread reads, parses and
 * validates (load-worker.ts); this thread only decodes and indexes the result, file by file as the worker sends
 * them, in slices of a few ms between requests (slices.ts). However large or hostile the new files, requests keep being answered meanwhile, by the
 * rules in force until the new ones are swapped in whole. A load that takes longer than `timeoutMs` has its worker terminated
 * and fails (the last good rules stay); the worker's heap is capped, so a load cannot exhaust memory either.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deserialize } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { IndexBuild } from '../compile/compile.js';
import type { CompileOptions, CompileResult } from '../compile/compile.js';
import { ConfigError } from '../config-error.js';
import { limitsOf } from '../limits.js';
import type { ErrorRecord, FilePart, WorkerMessage, WorkerRequest } from './load-worker.js';
import { withReadErrors } from './loader.js';
import type { ReadOptions } from './loader.js';
import type { RawDescriptor, RawFile } from '../raw.js';
import { runInSlices, type Steps } from '../slices.js';

export interface WorkerLoadOptions extends CompileOptions, ReadOptions {
  /** CONFIG_LOAD_TIMEOUT_MS: the worker is terminated after this long. */
  readonly timeoutMs: number;
}

/** Heap of the loading worker; a 1 MiB file validates in a few tens of MiB. */
const WORKER_HEAP_MB = 512;

// Run from the TypeScript sources (checkout, tests), the worker needs tsx's loader; from dist/, plain JS.
const SELF = fileURLToPath(import.meta.url);
const FROM_SOURCES = SELF.endsWith('.ts');
const ENTRY = pathToFileURL(join(dirname(SELF), FROM_SOURCES ? 'load-worker.ts' : 'load-worker.js')).href;
// tsx's ESM API (`tsx/esm/api`, import condition; require.resolve finds the package, not that file).
const TSX = FROM_SOURCES ? pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href : undefined;
const BOOT = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) await (await import(workerData.tsx)).tsImport(workerData.entry, workerData.entry);
  else await import(workerData.entry);
})().catch((err) => { setImmediate(() => { throw err; }); });
`;
export function loadConfigDirInWorker(dir: string, options: WorkerLoadOptions): Promise<CompileResult> {
  const limits = limitsOf(options);
  return inWorker({ dir, allFiles: options.allFiles ?? false, dotFiles: options.dotFiles ?? false, allowEmpty: options.allowEmpty ?? false, limits }, options);
}

/** compileConfigFiles off the event loop, for rules that arrive whole (over xDS); errors name the files as given. */
export function compileFilesInWorker(files: readonly { name: string; text: string }[], options: WorkerLoadOptions): Promise<CompileResult> {
  return inWorker({ dir: '(rules)', files, allFiles: false, dotFiles: false, allowEmpty: true, limits: limitsOf(options) }, options);
}

function inWorker(request: WorkerRequest, options: WorkerLoadOptions): Promise<CompileResult> {
  const dir = request.dir;
  const inbox = new Inbox();
  const worker = new Worker(BOOT, {
    eval: true,
    workerData: { ...request, entry: ENTRY, tsx: TSX },
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
  // The timeout bounds the worker's part; indexing what it sent is bounded by the limits.
  const timer = setTimeout(
    () => inbox.fail(`loading the rules took longer than ${options.timeoutMs} ms (CONFIG_LOAD_TIMEOUT_MS); the load was stopped`),
    options.timeoutMs,
  );
  worker.on('message', (m: WorkerMessage) => {
    if (m.kind === 'done') clearTimeout(timer);
    inbox.push(m);
  });
  worker.once('error', (err: Error) => inbox.fail(`loading the rules failed: ${err.message}`));
  worker.once('exit', (code) => inbox.fail(`loading the rules failed: the loading thread exited (code ${code})`));
  return runInSlices(fromWorker(inbox, dir, options))
    .catch((err: unknown) => failure(dir, `loading the rules failed: ${err instanceof Error ? err.message : String(err)}`))
    .finally(() => {
      clearTimeout(timer);
      void worker.terminate();
    });
}

/** The worker's messages in arrival order; a failure ends them (unless they were complete). */
class Inbox {
  private readonly queue: (WorkerMessage | { kind: 'failed'; reason: string })[] = [];
  private complete = false;
  private wake: (() => void) | undefined;

  push(m: WorkerMessage): void {
    if (this.complete) return;
    if (m.kind === 'done') this.complete = true;
    this.queue.push(m);
    this.wake?.();
  }

  fail(reason: string): void {
    if (this.complete) return;
    this.complete = true;
    this.queue.push({ kind: 'failed', reason });
    this.wake?.();
  }

  /** The next message, or a promise that settles when there is one. */
  next(): WorkerMessage | { kind: 'failed'; reason: string } | Promise<void> {
    const m = this.queue.shift();
    if (m !== undefined) return m;
    return new Promise<void>(
      (resolve) =>
        (this.wake = () => {
          this.wake = undefined;
          resolve();
        }),
    );
  }
}

function failure(dir: string, reason: string): CompileResult {
  return { ok: false, errors: [new ConfigError({ file: dir, line: 1, column: 1, path: '', reason })] };
}

function* fromWorker(inbox: Inbox, dir: string, options: CompileOptions): Steps<CompileResult> {
  const toError = (r: ErrorRecord): ConfigError => new ConfigError(r);
  const build = new IndexBuild(options);
  for (;;) {
    const m = inbox.next();
    if (m instanceof Promise) {
      yield m;
      continue;
    }
    if (m.kind === 'failed') return failure(dir, m.reason);
    if (m.kind === 'done') return withReadErrors(m.readErrors.map(toError), yield* build.finish(m.version));
    const file = yield* decodeFile(m.parts);
    yield* build.add({ file, errors: m.errors.map(toError), warnings: m.warnings.map(toError) });
  }
}

/** A RawFile from its parts, a part at a time. */
function* decodeFile(parts: readonly Uint8Array[]): Steps<RawFile> {
  let head: Omit<RawFile, 'descriptors'> | undefined;
  const descriptors: RawDescriptor[] = [];
  for (const bytes of parts) {
    const part = deserialize(bytes) as FilePart;
    yield;
    if (part.head !== undefined) head = deepFreeze(part.head);
    for (const d of part.descriptors) {
      descriptors.push(refreeze(d));
      yield;
    }
  }
  return Object.freeze({ ...head!, descriptors: Object.freeze(descriptors) });
}

/**
 * Structured clone drops Object.freeze: what the compiled rules take from a descriptor as it is (its metadata,
 * its limits' on_limit) is handed to the engine frozen, as validating in this thread leaves it.
 */
function refreeze(d: RawDescriptor): RawDescriptor {
  if (d.metadata !== undefined) deepFreeze(d.metadata);
  for (const l of d.rule?.limits ?? []) if (l.onLimit !== undefined) deepFreeze(l.onLimit);
  for (const c of d.descriptors) refreeze(c);
  return d;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}
