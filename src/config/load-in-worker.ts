/**
 * loadConfigDir off the event loop, for reloads of a running service: a worker thread reads, parses and
 * validates (load-worker.ts); this thread only indexes the result. However large or hostile the new files,
 * requests keep being answered meanwhile. A load that takes longer than `timeoutMs` has its worker terminated
 * and fails (the last good rules stay); the worker's heap is capped, so a load cannot exhaust memory either.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { indexValidatedFiles } from './compile.js';
import type { CompileOptions, CompileResult } from './compile.js';
import { ConfigError } from './errors.js';
import { limitsOf } from './limits.js';
import type { ErrorRecord, WorkerReply, WorkerRequest } from './load-worker.js';
import { withReadErrors } from './loader.js';
import type { ReadOptions } from './loader.js';

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
const TSX = FROM_SOURCES
  ? pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href
  : undefined;
const BOOT = `
const { workerData } = require('node:worker_threads');
(async () => {
  if (workerData.tsx) await (await import(workerData.tsx)).tsImport(workerData.entry, workerData.entry);
  else await import(workerData.entry);
})().catch((err) => { setImmediate(() => { throw err; }); });
`;
export function loadConfigDirInWorker(dir: string, options: WorkerLoadOptions): Promise<CompileResult> {
  const limits = limitsOf(options);
  return inWorker({ dir, allFiles: options.allFiles ?? false, allowEmpty: options.allowEmpty ?? false, limits }, options);
}

/** compileConfigFiles off the event loop, for rules that arrive whole (over xDS); errors name the files as given. */
export function compileFilesInWorker(files: readonly { name: string; text: string }[], options: WorkerLoadOptions): Promise<CompileResult> {
  return inWorker({ dir: '(rules)', files, allFiles: false, allowEmpty: true, limits: limitsOf(options) }, options);
}

function inWorker(request: WorkerRequest, options: WorkerLoadOptions): Promise<CompileResult> {
  const dir = request.dir;
  return new Promise<CompileResult>((resolve) => {
    let settled = false;
    const worker = new Worker(BOOT, {
      eval: true,
      workerData: { ...request, entry: ENTRY, tsx: TSX },
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB },
    });
    const finish = (result: CompileResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      resolve(result);
    };
    const fail = (reason: string): void =>
      finish({ ok: false, errors: [new ConfigError({ file: dir, line: 1, column: 1, path: '', reason })] });
    const timer = setTimeout(
      () => fail(`loading the rules took longer than ${options.timeoutMs} ms (CONFIG_LOAD_TIMEOUT_MS); the load was stopped`),
      options.timeoutMs,
    );
    worker.once('message', (reply: WorkerReply) => {
      try {
        finish(fromReply(reply, options));
      } catch (err) {
        fail(`loading the rules failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    });
    worker.once('error', (err) => fail(`loading the rules failed: ${err.message}`));
    worker.once('exit', (code) => fail(`loading the rules failed: the loading thread exited (code ${code})`));
  });
}

function fromReply(reply: WorkerReply, options: CompileOptions): CompileResult {
  const toError = (r: ErrorRecord): ConfigError => new ConfigError(r);
  const validated = reply.validated.map((v) => ({
    file: deepFreezeMetadata(v.file),
    errors: v.errors.map(toError),
    warnings: v.warnings.map(toError),
  }));
  return withReadErrors(reply.readErrors.map(toError), indexValidatedFiles(validated, reply.version, options));
}

/** Structured clone drops Object.freeze; metadata is handed to the engine as frozen JSON. */
function deepFreezeMetadata<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreezeMetadata(v);
  }
  return value;
}
