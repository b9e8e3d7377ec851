/**
 * `ratelimit serve | check DIR | query ... | help` — the command-line face of the service.
 * Exit codes: 0 success (query: OK), 1 error (bad settings, invalid rules, failed call), 2 usage,
 * 3 query answered OVER_LIMIT.
 */
import { loadConfigDir } from './config/index.js';
import { startService, StartupError } from './main.js';
import { runQuery, QUERY_USAGE } from './query.js';
import { loadSettings, SettingsError } from './settings.js';
import { redactRedisUrl } from './storage/redis/options.js';

const USAGE = `usage: ratelimit <command> [options]

commands:
  serve                 run the service (gRPC ${'RateLimitService'} + Health, HTTP admin); every setting is an env var or --flag (see docs/settings.md)
  check DIR             validate the rule files in DIR; prints every error (file:line:col: field: message) and exits 1, or a summary
  query ...             ask a running server over gRPC and print its decision
  help                  this text

${QUERY_USAGE}`;

async function serve(argv: string[]): Promise<number> {
  const { settings, rest } = loadSettings(process.env, argv);
  if (rest.length > 0) {
    // A mistyped flag may carry a URL with a password: mask it like every other echo of a URL.
    process.stderr.write(`serve: unknown arguments: ${rest.map(redactRedisUrl).join(' ')}\n`);
    return 2;
  }
  const service = await startService(settings);
  await new Promise<void>((resolve) => {
    // The first signal drains (SHUTDOWN_DRAIN_MS) then stops; a second one cuts the drain short.
    let signals = 0;
    const stop = (signal: string) => {
      signals++;
      process.stderr.write(`received ${signal}, ${signals === 1 ? 'shutting down' : 'ending the drain now'}\n`);
      service.close({ now: signals > 1 }).then(resolve, resolve);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
  // Everything is closed; should a stray handle keep the loop alive, do not hang the pod's termination.
  setTimeout(() => process.exit(0), 1000).unref();
  return 0;
}

async function check(argv: string[]): Promise<number> {
  const { settings, rest } = loadSettings(process.env, argv);
  const dir = rest[0] ?? settings.configDir;
  if (rest.length > 1) {
    process.stderr.write('check: give one directory\n');
    return 2;
  }
  const result = await loadConfigDir(dir, { mergeDomains: settings.mergeDomainConfig, maxFileBytes: settings.configMaxFileBytes });
  if (!result.ok) {
    for (const e of result.errors) process.stderr.write(`${String(e)}\n`);
    process.stderr.write(`${result.errors.length} error(s) in ${dir}\n`);
    return 1;
  }
  for (const w of result.warnings) process.stderr.write(`warning: ${String(w)}\n`);
  const domains = [...result.config.domains.values()];
  process.stdout.write(`${dir}: OK — ${result.config.files.length} file(s), ${domains.length} domain(s): ${domains.map((d) => d.name).join(', ') || '(none)'}\n`);
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

// Run when executed (bin/ratelimit.mjs imports this module), not when imported by tests.
const invokedDirectly = process.argv[1] !== undefined && /ratelimit(\.mjs)?$|cli\.[jt]s$/.test(process.argv[1]);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
