/**
 * Start phase: the rules. From CONFIG_DIR (loaded now, reloaded in a worker thread on change) or from an xDS
 * server (the client starts with the store, which its first set may need). A rules change is handed to the
 * hooks later phases add to `onChange`, in the order they add them.
 */
import { loadConfigDir, loadConfigDirInWorker, watchConfigDir } from '../config/index.js';
import { configDirProblem } from '../config/load/loader.js';
import type { CompiledConfig } from '../config/types.js';
import type { ConfigDescription } from '../config/compile/describe-rules.js';
import { countTimings } from '../config/compile/rules-in-force.js';
import { componentLogger } from '../observability/log.js';
import { rulesSnapshot } from '../observability/metrics-labels.js';
import { RulesHolder } from './reloader.js';
import type { StartContext } from './start-context.js';
import { StartupError } from '../vocab/startup-error.js';
import { xdsRules, type XdsRules } from './xds-rules.js';
import { memcachedRuleProblems } from './memcached-rules.js';

export interface StartedRules {
  readonly holder: RulesHolder;
  /** The rules loaded at start (with xDS: none, until the first set). */
  readonly initial: CompiledConfig;
  /** Set with CONFIG_TYPE=GRPC_XDS_SOTW (CONFIG_DIR is then not read). */
  readonly xds: XdsRules | undefined;
  /** Called after each reload that changed the rules, with the rules now in force. */
  readonly onChange: ((config: CompiledConfig) => void)[];
  /** Stops watching CONFIG_DIR (at once, or in its turn on the teardown). */
  readonly stopWatching: () => Promise<void>;
}

export async function startRules({ settings, clock, log, metrics, teardown }: StartContext): Promise<StartedRules> {
  const xds = settings.configType === 'GRPC_XDS_SOTW' ? xdsRules(settings, componentLogger(log, 'xds'), metrics) : undefined;
  // A missing rules directory is one clear line, before the watcher would log its own failure with a stack.
  const dirProblem = xds === undefined ? await configDirProblem(settings.configDir) : undefined;
  if (dirProblem !== undefined) throw new StartupError(`cannot start: CONFIG_DIR ${dirProblem}`);

  // A capacity server (CAPACITY_CONFIG) may run without rate-limit rules; otherwise no rules file is an error.
  const loadOptions = {
    mergeDomains: settings.mergeDomainConfig,
    allFiles: settings.configAllFiles,
    dotFiles: settings.configDotFiles,
    maxFileBytes: settings.configMaxFileBytes,
    allowEmpty: settings.capacityConfig !== '',
  };
  // What the watcher's changes reload: the holder, set once the first load succeeded.
  const target: { holder?: RulesHolder } = {};
  // The watcher starts before the first load: its baseline then predates what we load, so no change
  // made while we start up can be missed (at worst it causes one extra, identical reload).
  const watcher =
    settings.configWatch && xds === undefined
      ? watchConfigDir(settings.configDir, {
          allFiles: settings.configAllFiles,
          dotFiles: settings.configDotFiles,
          debounceMs: settings.configDebounceMs,
          pollIntervalMs: settings.configPollIntervalMs,
          maxFileBytes: settings.configMaxFileBytes,
          onChange: () => void target.holder?.reload(),
          onError: (err: unknown) => log.warn('rules watcher error', { error: err }),
        })
      : undefined;
  const stopWatching = teardown.defer('rules watcher', () => watcher?.close());
  const initial = xds !== undefined ? { ok: true as const, config: xds.initial, warnings: [] } : await loadConfigDir(settings.configDir, loadOptions);
  if (!initial.ok) throw new StartupError(`rules in ${settings.configDir} are invalid`, initial.errors.map(String));
  if (xds === undefined) metrics.reference?.onConfigLoad(true); // over xDS the first set is the first load
  const vet = settings.backend === 'memcached' ? memcachedRuleProblems : () => [];
  const refused = vet(initial.config);
  if (refused.length > 0) throw new StartupError(`rules in ${settings.configDir} cannot run on memcached`, refused);

  // Reloads parse and validate in a worker thread, so that no rules file can stall the requests being served.
  const reload = () => loadConfigDirInWorker(settings.configDir, { ...loadOptions, timeoutMs: settings.configLoadTimeoutMs });
  const onChange: ((config: CompiledConfig) => void)[] = [];
  const rules = new RulesHolder(
    initial.config,
    reload,
    (status, changed) => {
      metrics.configReloads.inc({ result: status.ok ? 'success' : 'failure' });
      if (!status.ok || changed) metrics.reference?.onConfigLoad(status.ok); // a load that changes nothing is not a new config
      metrics.configLastReloadSuccess.set(status.ok ? 1 : 0);
      metrics.configLastReloadTime.set(clock.nowMs() / 1000);
      if (status.ok && changed) metrics.setRules(rulesSnapshot(rules.config));
      if (status.ok && changed) for (const hook of onChange) hook(rules.config);
      if (!status.ok) log.error('rules reload failed; keeping the last good rules', { errors: status.errors, version: status.version });
      else if (changed) log.info('rules reloaded', { version: status.version, domains: [...rules.config.domains.keys()] });
      if (status.ok && changed && status.warnings.length > 0) log.warn('rules have ignored keys', { warnings: status.warnings });
    },
    initial.warnings,
    clock,
    vet,
  );
  if (initial.warnings.length > 0) log.warn('rules have ignored keys', { warnings: initial.warnings.map(String) });
  target.holder = rules;
  metrics.configLastReloadSuccess.set(1);
  metrics.configLastReloadTime.set(clock.nowMs() / 1000);
  metrics.setRules(rulesSnapshot(initial.config));
  // Read at each scrape at the service's clock: a rule that starts or ends moves the gauge without a reload.
  metrics.watchRuleValidity(() => countTimings(rules.config.describe() as ConfigDescription, clock.nowMs()));
  return { holder: rules, initial: initial.config, xds, onChange, stopWatching };
}
