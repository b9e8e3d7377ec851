/** The rules configuration: parse → validate → compile (pure), the directory loader and the ConfigMap watcher. */
export { compileConfigFiles, contentVersion } from './compile/compile.js';
export type { CompileOptions, CompileResult } from './compile/compile.js';
export { ConfigError } from './config-error.js';
export { configDirProblem, loadConfigDir, readConfigFiles } from './load/loader.js';
export type { ConfigFile } from './load/loader.js';
export { watchConfigDir } from './load/watcher.js';
export type { ConfigWatcher, WatchOptions } from './load/watcher.js';
export type { ConfigDescription, DescribedDomain, DescribedLimit, DescribedRule } from './compile/describe-rules.js';
export type { CompiledConfig, CompiledDomain, CompiledLimit, CompiledRule, ConfigErrorInfo, RuleMatch } from './types.js';
export { DEFAULT_LIMITS } from './limits.js';
export type { ConfigLimits } from './limits.js';
export { compileFilesInWorker, loadConfigDirInWorker } from './load/load-in-worker.js';
export type { WorkerLoadOptions } from './load/load-in-worker.js';
