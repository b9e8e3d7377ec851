/** The rules configuration: parse → validate → compile (pure), the directory loader and the ConfigMap watcher. */
export { compileConfigFiles, contentVersion } from './compile.js';
export type { CompileOptions, CompileResult } from './compile.js';
export { ConfigError } from './errors.js';
export { configDirProblem, loadConfigDir, readConfigFiles } from './loader.js';
export type { ConfigFile } from './loader.js';
export { watchConfigDir } from './watcher.js';
export type { ConfigWatcher, WatchOptions } from './watcher.js';
export type { ConfigDescription, DescribedDomain, DescribedLimit, DescribedRule } from './describe.js';
export type {
  CompiledConfig,
  CompiledDomain,
  CompiledLimit,
  CompiledRule,
  ConfigErrorInfo,
  RuleMatch,
} from './types.js';
export { DEFAULT_LIMITS } from './limits.js';
export type { ConfigLimits } from './limits.js';
export { compileFilesInWorker, loadConfigDirInWorker } from './load-in-worker.js';
export type { WorkerLoadOptions } from './load-in-worker.js';
