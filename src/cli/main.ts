/**
 * `ratelimit serve | check DIR | query ... | top ... | capacity ... | help | --version` — the command-line face of the service.
 * Exit codes: 0 success (query: OK), 1 error (bad settings, invalid rules, failed call), 2 usage,
 * 3 query answered OVER_LIMIT.
 */
import { checkNotes } from '../config/compile/check-notes.js';
import { parseRfc3339 } from '../config/validate/validate-validity.js';
import type { ConfigDescription } from '../config/index.js';
import { runCapacityCli } from './capacity.js';
import { loadCapacityFile } from '../capacity/load.js';
import { loadConfigDir } from '../config/index.js';
import { createLogger } from '../observability/log.js';
import { startService, StartupError } from '../app/start-service.js';
import { checkWorkers, isPrimaryOfWorkers, superviseWorkers } from '../app/workers.js';
import { memcachedRuleProblems } from '../app/memcached-rules.js';
import { setHeapGrowingPercent } from '../app/heap-growth.js';
import { runQuery } from './query.js';
import { runTop } from './top.js';
import { SETTINGS, defaultText, flagName, loadSettings, SettingsError } from '../settings/settings.js';
import { checkCombination, exposureNotices } from '../settings/settings-checks.js';
import { redactUrl } from '../vocab/redact.js';
import { VERSION } from '../app/version.js';

const USAGE = `usage: ratelimit <command> [options]

commands:
  serve                 run the service (gRPC ${'RateLimitService'} + Health, HTTP admin); \`serve --help\` lists every setting
  check [DIR]           validate the rule files in DIR (default CONFIG_DIR) and, with --capacity-config FILE, the capacity resource file; prints every error (file:line:col: field: message) and exits 1, or a summary
  query ...             ask a running server over gRPC what it would decide (a dry run unless --spend); \`query --help\` lists its options
  top ...               who is being limited: the keys most rejected and near the limit per rule (GET /top); \`top --help\` lists its options
  capacity ...          ask a capacity server (ours or Doorman) for capacity, as Doorman's shell does; \`capacity --help\` lists its commands
  help                  this text

Every command answers --help (or -h) with its usage.
  --version             print the version`;

const CHECK_USAGE = `usage: ratelimit check [DIR] [--at TIME] [--capacity-config FILE] [--config-all-files] [--merge-domain-config] [--config-max-file-bytes N]

Validates the rules in DIR (default: CONFIG_DIR, or RUNTIME_ROOT/... as the reference names it) as the service
would load them, without starting anything. Prints every error as file:line:col: field: message and exits 1;
warnings go to stderr and do not fail; otherwise prints a summary and exits 0. A directory without any rules
file fails. With --capacity-config FILE (or CAPACITY_CONFIG) the capacity resource file (docs/capacity.md) is
checked first, with the same quality of errors. Notes on rules that have ended or end within 7 days are read at
the current time, or at --at TIME (RFC 3339, such as 2025-06-01T08:00:00Z).`;

/** `serve --help`: every setting with its env var, flag, accepted values, default and meaning. */
export function serveHelp(): string {
  const lines = [
    'usage: ratelimit serve [--flag value ...]',
    '',
    "Every setting is an env var or the --flag beside it (a flag wins). envoyproxy/ratelimit's names are read too (docs/switching.md).",
    '',
  ];
  for (const s of Object.values(SETTINGS)) {
    lines.push(`  ${s.env} / ${flagName(s.env)}  [${s.type.replaceAll('\\|', '|')}] (default: ${defaultText(s)})`, `      ${s.description}`);
  }
  return `${lines.join('\n')}\n`;
}

async function serve(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(serveHelp());
    return 0;
  }
  const { settings, rest, notices, given } = loadSettings(process.env, argv);
  const combination = checkCombination(settings, given);
  if (combination.errors.length > 0) throw new SettingsError(combination.errors);
  notices.push(...combination.notices, ...exposureNotices(settings));
  if (rest.length > 0) {
    // A mistyped flag may carry a URL with a password: mask it like every other echo of a URL.
    process.stderr.write(`serve: unknown arguments: ${rest.map(redactUrl).join(' ')}\n`);
    return 2;
  }
  checkWorkers(settings);
  if (isPrimaryOfWorkers(settings)) return superviseWorkers(settings, (line) => process.stderr.write(line));
  // Before anything is allocated: the old generation's growth between full collections (app/heap-growth.ts).
  setHeapGrowingPercent(settings.heapGrowingPercent);
  const log = createLogger({ level: settings.logLevel, format: settings.logFormat });
  // The handlers are in place before the service starts: a signal sent as soon as the start line appears
  // (or during start-up) must drain like any other, not kill the process by the default action. The
  // first signal drains (SHUTDOWN_DRAIN_MS) then stops; a second one cuts the drain short.
  let service: Awaited<ReturnType<typeof startService>> | undefined;
  let signals = 0;
  let stopped!: () => void;
  const done = new Promise<void>((resolve) => (stopped = resolve));
  const stop = (signal: string) => {
    signals++;
    if (service === undefined) {
      log.info('stopping once started', { signal });
      return;
    }
    log.info(signals === 1 ? 'shutting down' : 'ending the drain now', { signal });
    service.close({ now: signals > 1 }).then(stopped, stopped);
  };
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  try {
    service = await startService(settings, { notices, log });
  } catch (err) {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    throw err;
  }
  if (signals > 0) {
    log.info('shutting down', { signal: 'received during start-up' });
    service.close({ now: signals > 1 }).then(stopped, stopped);
  }
  await done;
  // Everything is closed; should a stray handle keep the loop alive, do not hang the pod's termination.
  setTimeout(() => process.exit(0), 1000).unref();
  return 0;
}

async function check(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${CHECK_USAGE}\n`);
    return 0;
  }
  const atIndex = argv.indexOf('--at');
  const atText = atIndex >= 0 ? argv[atIndex + 1] : undefined;
  const at = atText === undefined ? Date.now() : parseRfc3339(atText);
  if (atIndex >= 0 && at === undefined) {
    process.stderr.write(`check: --at takes an RFC 3339 time such as 2025-06-01T08:00:00Z, not '${atText ?? ''}'\n`);
    return 2;
  }
  const { settings, rest } = loadSettings(process.env, atIndex >= 0 ? [...argv.slice(0, atIndex), ...argv.slice(atIndex + 2)] : argv);
  const dir = rest[0] ?? settings.configDir;
  const unknown = rest.find((a) => a.startsWith('-'));
  if (unknown !== undefined) {
    process.stderr.write(`check: unknown option ${unknown}\n\n${CHECK_USAGE}\n`);
    return 2;
  }
  if (rest.length > 1) {
    process.stderr.write('check: give one directory\n');
    return 2;
  }
  if (settings.capacityConfig !== '') {
    // The capacity resource file (CAPACITY_CONFIG / --capacity-config) is checked with the rules.
    const capacity = await loadCapacityFile(settings.capacityConfig);
    if (!capacity.ok) {
      for (const e of capacity.errors) process.stderr.write(`${String(e)}\n`);
      process.stderr.write(`${capacity.errors.length} error(s) in ${settings.capacityConfig}\n`);
      return 1;
    }
    process.stdout.write(`${settings.capacityConfig}: OK — ${capacity.config.templates.length} resource template(s)\n`);
  }
  const result = await loadConfigDir(dir, {
    mergeDomains: settings.mergeDomainConfig,
    allFiles: settings.configAllFiles,
    dotFiles: settings.configDotFiles,
    maxFileBytes: settings.configMaxFileBytes,
  });
  if (!result.ok) {
    for (const e of result.errors) process.stderr.write(`${String(e)}\n`);
    process.stderr.write(`${result.errors.length} error(s) in ${dir}\n`);
    return 1;
  }
  for (const w of result.warnings) process.stderr.write(`warning: ${String(w)}\n`);
  // With BACKEND=memcached, what the service would refuse at start is an error here too.
  const refused = settings.backend === 'memcached' ? memcachedRuleProblems(result.config) : [];
  if (refused.length > 0) {
    for (const p of refused) process.stderr.write(`${p}\n`);
    process.stderr.write(`${refused.length} error(s) in ${dir}\n`);
    return 1;
  }
  for (const note of checkNotes(result.config.describe() as ConfigDescription, at!)) process.stderr.write(`note: ${note}\n`);
  const domains = [...result.config.domains.values()];
  process.stdout.write(
    `${dir}: OK — ${result.config.files.length} file(s), ${domains.length} domain(s): ${domains.map((d) => d.name).join(', ') || '(none)'}\n`,
  );
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await serve(rest);
      case 'check':
        return await check(rest);
      case 'query':
        return await runQuery(rest, process.stdout, process.stderr);
      case 'top':
        return await runTop(rest, process.stdout, process.stderr);
      case 'capacity':
        return await runCapacityCli(rest, process.stdout, process.stderr);
      case '--version':
      case 'version':
        process.stdout.write(
          rest.includes('--help') || rest.includes('-h') ? 'usage: ratelimit --version\n\nPrints the version.\n' : `ratelimit-sidecar ${VERSION}\n`,
        );
        return 0;
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        process.stderr.write(`${command === undefined ? 'no command given' : `unknown command '${command}'`}\n\n${USAGE}\n`);
        return 2;
    }
  } catch (err) {
    if (err instanceof SettingsError || err instanceof StartupError) {
      process.stderr.write(`${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
